import { defineRoom } from '../room.js';
import { WebhooksService } from './service.js';

declare module '../services.js' {
  interface Services {
    webhooks: WebhooksService;
  }
}

/** Webhook endpoints, their signed deliveries (a job per event and endpoint) and the delivery log. */
export const webhooksRoom = defineRoom({
  name: 'webhooks',
  service: ({ services }) => new WebhooksService(services.jobs),
});
