import { defineRoom } from '../room.js';
import { TokenRevocations } from './revocations.js';
import { AuthService } from './service.js';

declare module '../services.js' {
  interface Services {
    auth: AuthService;
  }
}

/** Credentials: API keys and access tokens, and the scopes they carry. */
export const authRoom = defineRoom({
  name: 'auth',
  service: ({ db, uow, clock, services, accessTokenTtlSeconds }) =>
    new AuthService(
      db.kysely,
      uow,
      clock,
      services.accounts,
      (clientId) => services.apps.requireByClientId(clientId),
      accessTokenTtlSeconds,
      new TokenRevocations(),
    ),
});
