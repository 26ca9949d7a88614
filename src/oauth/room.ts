import { defineRoom } from '../room.js';
import routes from './routes.js';
import { OAuthService } from './service.js';

declare module '../services.js' {
  interface Services {
    oauth: OAuthService;
  }
}

/** The OAuth 2.0 authorization server. */
export const oauthRoom = defineRoom({
  name: 'oauth',
  routes,
  routeOptions: (config) => ({ config }),
  service: ({ accessTokenTtlSeconds, clock, db, services, uow }) =>
    new OAuthService(
      db.kysely,
      uow,
      clock,
      services.apps,
      services.auth,
      accessTokenTtlSeconds,
      () => services.webhooks,
    ),
});
