import { defineRoom } from '../room.js';
import { ActivityTypesService } from './service.js';

declare module '../services.js' {
  interface Services {
    activityTypes: ActivityTypesService;
  }
}

/** Activity types: what customers do, each with its token. */
export const activityTypesRoom = defineRoom({
  name: 'activityTypes',
  service: ({ db, services, uow }) => new ActivityTypesService(db.kysely, uow, services.accounts),
});
