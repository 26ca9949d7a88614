import { defineRoom } from '../room.js';
import { AppsService } from './service.js';

declare module '../services.js' {
  interface Services {
    apps: AppsService;
  }
}

/** OAuth apps. */
export const appsRoom = defineRoom({
  name: 'apps',
  service: ({ db, uow }) => new AppsService(db.kysely, uow),
});
