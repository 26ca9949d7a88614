import { defineRoom } from '../room.js';
import routes from './routes.js';

/** The merchant console at /admin. */
export const adminRoom = defineRoom({
  name: 'admin',
  routes,
  routeOptions: () => ({ prefix: '/admin' }),
});
