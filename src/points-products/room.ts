import { defineRoom } from '../room.js';
import routes from './routes.js';

/** Points products: rewards for sale for points. */
export const pointsProductsRoom = defineRoom({
  routes,
});
