import { defineRoom } from '../room.js';
import routes from './routes.js';

/** The merchant console at /admin. */
export const adminRoom = defineRoom({
  routes,
  routeOptions: () => ({ prefix: '/admin' }),
});
