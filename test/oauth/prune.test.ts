// Expired codes, sessions and sign-in throttles go only when housekeeping prunes them (src/housekeeping.ts), never on a request.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import {
  authorize,
  authorizeUrl,
  Browser,
  exchange,
  type OAuthFixture,
  REDIRECT_URI,
  setupOAuth,
  signIn,
} from './helpers.js';

let t: TestApp;
let f: OAuthFixture;
beforeEach(async () => {
  t = await createTestApp();
  f = await setupOAuth(t);
});
afterEach(async () => t.close());

const count = async (table: 'oauth_codes' | 'oauth_sessions' | 'oauth_sign_in_failures') =>
  Number(
    (
      await t.db.kysely
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const page = () =>
  authorizeUrl({ client_id: f.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state: 's' });

it('prunes codes only past the retention, and only on call', async () => {
  const { code } = await authorize(t, f, { scope: 'customer_identity:write' });
  expect((await exchange(t, f, code)).statusCode).toBe(200);
  await authorize(t, f, { scope: 'customer_identity:write' });
  expect(await count('oauth_codes')).toBe(2);
  expect(await t.services.oauth.pruneExpiredCodes()).toBe(0);
  t.clock.advance(24 * 3600 * 1000 + 60 * 1000);
  expect(await t.services.oauth.pruneExpiredCodes()).toBe(0);
  t.clock.advance(1);
  await authorize(t, f, { scope: 'customer_identity:write' });
  expect(await count('oauth_codes')).toBe(3);
  expect(await t.services.oauth.pruneExpiredCodes()).toBe(2);
  expect(await count('oauth_codes')).toBe(1);
});

it('prunes sessions and throttle counts only on call', async () => {
  await signIn(new Browser(t.app), page(), f.email, f.password);
  expect(await count('oauth_sessions')).toBe(1);
  expect(await t.services.sessions.pruneExpired()).toBe(0);
  t.clock.advance(30 * 60 * 1000);
  // A sign-in no longer prunes.
  await signIn(new Browser(t.app), page(), f.email, f.password);
  expect(await count('oauth_sessions')).toBe(2);
  expect(await t.services.sessions.pruneExpired()).toBe(1);
  t.clock.advance(24 * 3600 * 1000 + 2000);
  expect(await t.services.sessions.pruneExpired()).toBe(2);
  expect(await count('oauth_sessions')).toBe(0);
  expect(await count('oauth_sign_in_failures')).toBe(0);
});
