import { defineRoom } from '../room.js';
import { ExportsService } from './service.js';

declare module '../services.js' {
  interface Services {
    exports: ExportsService;
  }
}

/** Exports: an account's records as CSV or JSON Lines, from one snapshot. */
export const exportsRoom = defineRoom({
  name: 'exports',
  service: ({ db, clock, services }) =>
    new ExportsService(
      db,
      clock,
      services.accounts,
      services.customers,
      services.pointsTransactions,
      services.rewardFulfillments,
      services.activities,
    ),
});
