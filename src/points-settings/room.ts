import { defineRoom } from '../room.js';
import routes from './routes.js';
import { PointsSettingsService } from './service.js';

declare module '../services.js' {
  interface Services {
    pointsSettings: PointsSettingsService;
  }
}

/** What an account calls its points. */
export const pointsSettingsRoom = defineRoom({
  name: 'pointsSettings',
  routes,
  service: ({ db, services, uow }) => new PointsSettingsService(db.kysely, uow, services.accounts),
});
