import { defineRoom } from '../room.js';
import routes from './routes.js';
import { ReferralsService } from './service.js';

declare module '../services.js' {
  interface Services {
    referrals: ReferralsService;
  }
}

/** The referral program that runs: referrals, their rewards and completion, referral URLs. */
export const referralsRoom = defineRoom({
  name: 'referrals',
  routes,
  service: ({ db, clock, uow, services }) =>
    new ReferralsService(
      db.kysely,
      clock,
      uow,
      services.referralSettings,
      services.customers,
      services.pointsTransactions,
      services.rewardFulfillments,
      services.events,
    ),
});
