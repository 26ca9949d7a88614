import { defineRoom } from '../room.js';
import routes from './routes.js';

/** Activities, evaluated against the earning rules. */
export const activitiesRoom = defineRoom({
  routes,
});
