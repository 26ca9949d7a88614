import { defineRoom } from '../room.js';
import routes from './routes.js';
import { PointsTransactionsService } from './service.js';

declare module '../services.js' {
  interface Services {
    pointsTransactions: PointsTransactionsService;
  }
}

/** The points ledger. */
export const pointsTransactionsRoom = defineRoom({
  name: 'pointsTransactions',
  routes,
  service: ({ clock, db, services }) =>
    new PointsTransactionsService(
      db.kysely,
      clock,
      services.idempotency,
      services.customers,
      services.vipTiers,
      services.events,
    ),
});
