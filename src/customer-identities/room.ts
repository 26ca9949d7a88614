import { defineRoom } from '../room.js';
import routes from './routes.js';

/** Customer identities: records of outside systems linked to customers. */
export const customerIdentitiesRoom = defineRoom({
  routes,
});
