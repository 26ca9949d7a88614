import { defineRoom } from '../room.js';
import routes from './routes.js';

/** What happened: the outbox every change writes its events to, and the feed that reads them. */
export const eventsRoom = defineRoom({
  routes,
  jobs: (services) => [services.events.retentionJob()],
});
