import { defineRoom } from '../room.js';
import routes from './routes.js';

/** What an account calls its points. */
export const pointsSettingsRoom = defineRoom({
  routes,
});
