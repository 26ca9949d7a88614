import { defineRoom } from '../room.js';
import routes from './routes.js';
import { VipTiersService } from './service.js';

declare module '../services.js' {
  interface Services {
    vipTiers: VipTiersService;
  }
}

/** VIP tiers and the placement of customers in them. */
export const vipTiersRoom = defineRoom({
  name: 'vipTiers',
  routes,
  service: ({ db, uow, services }) => new VipTiersService(db.kysely, uow, services.accounts, services.events),
});
