import { defineRoom } from '../room.js';
import routes from './routes.js';

/** The rewards issued, with their codes. */
export const rewardFulfillmentsRoom = defineRoom({
  routes,
});
