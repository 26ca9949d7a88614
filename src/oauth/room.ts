import { defineRoom } from '../room.js';
import routes from './routes.js';

/** The OAuth 2.0 authorization server. */
export const oauthRoom = defineRoom({
  routes,
  routeOptions: (config) => ({ config }),
});
