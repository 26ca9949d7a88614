import { defineRoom } from '../room.js';
import routes from './routes.js';

/** The referral program that runs: referrals, their rewards and completion, referral URLs. */
export const referralsRoom = defineRoom({
  routes,
});
