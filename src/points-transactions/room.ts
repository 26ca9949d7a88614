import { defineRoom } from '../room.js';
import routes from './routes.js';

/** The points ledger. */
export const pointsTransactionsRoom = defineRoom({
  routes,
});
