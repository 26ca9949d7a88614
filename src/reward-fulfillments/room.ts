import { defineRoom } from '../room.js';
import routes from './routes.js';
import { RewardFulfillmentsService } from './service.js';

declare module '../services.js' {
  interface Services {
    rewardFulfillments: RewardFulfillmentsService;
  }
}

/** The rewards issued, with their codes. */
export const rewardFulfillmentsRoom = defineRoom({
  name: 'rewardFulfillments',
  routes,
  service: ({ clock, db, uow, services }) =>
    new RewardFulfillmentsService(
      db.kysely,
      clock,
      services.events,
      services.customers,
      services.pointsTransactions,
      uow,
    ),
});
