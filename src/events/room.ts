import { defineRoom } from '../room.js';
import routes from './routes.js';
import { EventsService } from './service.js';

declare module '../services.js' {
  interface Services {
    events: EventsService;
  }
}

/** What happened: the outbox every change writes its events to, and the feed that reads them. */
export const eventsRoom = defineRoom({
  name: 'events',
  routes,
  service: ({ db, uow, clock, events, services }) =>
    new EventsService(db.kysely, uow, clock, events.retentionDays, () => services.webhooks),
  jobs: (services) => [services.events.retentionJob()],
});
