import { defineRoom } from '../room.js';
import routes from './routes.js';
import { WebhooksService } from './service.js';

declare module '../services.js' {
  interface Services {
    webhooks: WebhooksService;
  }
}

/** Webhook endpoints, their signed deliveries (a job per event and endpoint) and the delivery log. */
export const webhooksRoom = defineRoom({
  name: 'webhooks',
  routes,
  service: ({ db, uow, clock, events, services }) =>
    new WebhooksService({
      db: db.kysely,
      uow,
      clock,
      jobs: services.jobs,
      // The events room reaches this one lazily, and this one it: neither is built inside the other.
      events: () => services.events,
      settings: events,
    }),
  jobs: (services) => [services.webhooks.deliveryJob()],
});
