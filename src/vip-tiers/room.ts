import { defineRoom } from '../room.js';
import routes from './routes.js';
import { VipTiersService } from './service.js';

declare module '../services.js' {
  interface Services {
    vipTiers: VipTiersService;
  }
}

/** VIP tiers, the program's type and periods, and the placement of customers in them. */
export const vipTiersRoom = defineRoom({
  name: 'vipTiers',
  routes,
  service: ({ clock, db, uow, services }) =>
    new VipTiersService(db.kysely, clock, uow, services.accounts, services.events, services.jobs),
  jobs: (services) => [services.vipTiers.job()],
});
