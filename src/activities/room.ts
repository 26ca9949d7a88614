import { defineRoom } from '../room.js';
import routes from './routes.js';
import { ActivitiesService } from './service.js';

declare module '../services.js' {
  interface Services {
    activities: ActivitiesService;
  }
}

/** Activities, evaluated against the earning rules. */
export const activitiesRoom = defineRoom({
  name: 'activities',
  routes,
  service: ({ clock, db, uow, services }) =>
    new ActivitiesService(
      db.kysely,
      clock,
      uow,
      services.activityTypes,
      services.earningRules,
      services.customers,
      services.pointsTransactions,
      services.events,
      services.referrals,
      services.rewardFulfillments,
    ),
});
