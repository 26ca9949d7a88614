import { defineRoom } from '../room.js';
import routes from './routes.js';
import { AdminService } from './service.js';

declare module '../services.js' {
  interface Services {
    admin: AdminService;
  }
}

/** The merchant console at /admin. */
export const adminRoom = defineRoom({
  name: 'admin',
  routes,
  routeOptions: () => ({ prefix: '/admin' }),
  service: ({ clock, db }) => new AdminService(db.kysely, clock),
});
