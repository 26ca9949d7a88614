import { defineRoom } from '../room.js';
import routes from './routes.js';
import { PointsProductsService } from './service.js';

declare module '../services.js' {
  interface Services {
    pointsProducts: PointsProductsService;
  }
}

/** Points products: rewards for sale for points. */
export const pointsProductsRoom = defineRoom({
  name: 'pointsProducts',
  routes,
  service: ({ clock, db, uow, services }) =>
    new PointsProductsService(
      db.kysely,
      clock,
      uow,
      services.accounts,
      services.pointsSettings,
      services.customers,
      services.pointsTransactions,
      services.rewardFulfillments,
      services.events,
    ),
});
