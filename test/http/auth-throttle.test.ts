import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { newSecret } from '../../src/auth/secrets.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';

const LIMIT = 30;
// Loopback addresses: plain HTTP is accepted from them (see src/http/transport.ts).
const ADDRESS = '127.0.0.7';

describe('the failed-authentication throttle', () => {
  let t: TestApp | undefined;
  afterEach(async () => t?.close());

  const get = (headers: Record<string, string>, remoteAddress = ADDRESS): Promise<LightMyRequestResponse> =>
    t!.app.inject({ method: 'GET', url: '/v1/earning_rules', headers, remoteAddress });

  /** A tenant whose API key is revoked and whose access token has expired: a merchant's stale client. */
  async function staleTenant(): Promise<Tenant> {
    const stale = await createTenant(t!.services, 'Stale shop');
    await t!.services.auth.revokeApiKey(stale.apiKeyId);
    await t!.services.auth.revokeAccessToken(stale.accessToken);
    return stale;
  }

  /** Sends `LIMIT` failing requests from ADDRESS, as a retry loop and a guesser would. */
  async function failUntilBlocked(stale: Tenant): Promise<void> {
    const bad = [stale.apiKey, stale.accessToken, newSecret('api_'), 'not-a-key'];
    for (let i = 0; i < LIMIT; i++) expectError(await get(bearer(bad[i % bad.length]!)), 'unauthorized');
    const blocked = await get(bearer(stale.apiKey));
    expectError(blocked, 'rate_limited');
  }

  it('serves the valid keys and tokens of other accounts at once from an address past the limit', async () => {
    t = await createTestApp({ AUTH_FAILURES_PER_MINUTE: String(LIMIT), RATE_LIMIT_PER_SECOND: '100' });
    const stale = await staleTenant();
    const others = [await createTenant(t.services, 'Shop B'), await createTenant(t.services, 'Shop C')];
    await failUntilBlocked(stale);

    // Neither account's credentials were ever used before: nothing of them is cached.
    for (const other of others) {
      for (const token of [other.apiKey, other.accessToken]) {
        const response = await get(bearer(token));
        expect(response.statusCode, response.body).toBe(200);
        // Limited by its own per-credential limit, as from any address.
        expect(response.headers['ratelimit-limit']).toBe('100');
        expect(response.headers['ratelimit-remaining']).toBe('99');
      }
    }
    // The address is still over the limit for credentials that fail.
    expectError(await get(bearer(stale.accessToken)), 'rate_limited');
    expect((await get(bearer(others[0]!.apiKey))).statusCode).toBe(200);
  });

  it('answers known-bad credentials past the limit 429 with Retry-After, without reading the database', async () => {
    t = await createTestApp({ AUTH_FAILURES_PER_MINUTE: String(LIMIT) });
    const stale = await staleTenant();
    await failUntilBlocked(stale);

    // With the credential tables out of the way, any look-up would be a 500.
    await sql`alter table api_keys rename to api_keys_away`.execute(t.db.kysely);
    await sql`alter table access_tokens rename to access_tokens_away`.execute(t.db.kysely);
    try {
      for (const headers of [
        bearer(stale.apiKey),
        bearer(stale.accessToken),
        bearer('not-a-key'),
        { authorization: 'Bearer !!!' },
        { authorization: 'Basic dXNlcjpwYXNz' },
        {},
      ]) {
        const refused = await get(headers);
        expectError(refused, 'rate_limited');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
        expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
      }
      // Another address is not over the limit: the same stale key is a plain 401 there (and,
      // being known bad, still costs no read).
      expectError(await get(bearer(stale.apiKey), '127.0.0.8'), 'unauthorized');
    } finally {
      await sql`alter table api_keys_away rename to api_keys`.execute(t.db.kysely);
      await sql`alter table access_tokens_away rename to access_tokens`.execute(t.db.kysely);
    }

    // A never-seen credential must be looked up to be known bad; past the limit it is a 429 too.
    const unseen = await get(bearer(newSecret('oa2_')));
    expectError(unseen, 'rate_limited');
    expect(Number(unseen.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers every failure 401 when the throttle is off', async () => {
    t = await createTestApp({ AUTH_FAILURES_PER_MINUTE: '0' });
    const stale = await staleTenant();
    for (let i = 0; i < 40; i++) expectError(await get(bearer(stale.apiKey)), 'unauthorized');
  });
});
