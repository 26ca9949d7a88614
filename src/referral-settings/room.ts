import { defineRoom } from '../room.js';
import routes from './routes.js';

/** The referral program settings of the spec. */
export const referralSettingsRoom = defineRoom({
  routes,
});
