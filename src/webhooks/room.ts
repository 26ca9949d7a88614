import { defineRoom } from '../room.js';
import routes from './routes.js';

/** Webhook endpoints, their signed deliveries (a job per event and endpoint) and the delivery log. */
export const webhooksRoom = defineRoom({
  routes,
  jobs: (services) => [services.webhooks.deliveryJob()],
});
