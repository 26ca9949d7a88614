import { defineRoom } from '../room.js';
import routes from './routes.js';

/** Earning rules, listed a page at a time. */
export const earningRulesRoom = defineRoom({
  routes,
});
