import { defineRoom } from '../room.js';
import routes from './routes.js';
import { EarningRulesService } from './service.js';

declare module '../services.js' {
  interface Services {
    earningRules: EarningRulesService;
  }
}

/** Earning rules, listed a page at a time. */
export const earningRulesRoom = defineRoom({
  name: 'earningRules',
  routes,
  service: ({ clock, db, services, uow }) =>
    new EarningRulesService(db, uow, services.accounts, services.activityTypes, clock),
});
