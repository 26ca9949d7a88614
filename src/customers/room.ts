import { defineRoom } from '../room.js';
import routes from './routes.js';

/** An account's customers. */
export const customersRoom = defineRoom({
  routes,
});
