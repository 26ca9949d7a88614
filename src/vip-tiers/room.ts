import { defineRoom } from '../room.js';
import routes from './routes.js';

/** VIP tiers, the program's type and periods, and the placement of customers in them. */
export const vipTiersRoom = defineRoom({
  routes,
  jobs: (services) => [services.vipTiers.job()],
});
