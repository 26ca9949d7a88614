import { defineRoom } from '../room.js';
import { PointsExpiryService } from './service.js';

declare module '../services.js' {
  interface Services {
    pointsExpiry: PointsExpiryService;
  }
}

/** Points expiry: balances idle past the account's setting expire, with a reminder 14 days before. */
export const pointsExpiryRoom = defineRoom({
  name: 'pointsExpiry',
  service: ({ clock, db, uow, services }) =>
    new PointsExpiryService(
      db.kysely,
      clock,
      uow,
      services.pointsSettings,
      services.customers,
      services.pointsTransactions,
      services.events,
    ),
  jobs: (services) => [services.pointsExpiry.job()],
});
