import { randomInt } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { assertRedisReachable, testRedisUrl } from '../helpers/redis.js';
import { seedTenant } from '../helpers/seed.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';

const LIMIT = 10;

// Two real server processes behind one trusted proxy, sharing a database and Redis: one
// merchant's stale credentials in a retry loop must not lock out the others behind that proxy.
describe.skipIf(!testRedisUrl)(`the failed-authentication throttle across two processes (${testEngine}, Redis)`, () => {
  let database: TestDatabaseUrl;
  let servers: ServerProcess[] = [];
  let stale: Tenant;
  let others: Tenant[];
  // The proxy's client address, new on every run: the counters in Redis outlive a run by a minute
  // and are shared with the other tests using that Redis.
  const address = `198.18.${randomInt(256)}.${randomInt(1, 255)}`;

  beforeAll(async () => {
    await assertRedisReachable(testRedisUrl!);
    database = await createTestDatabaseUrl();
    stale = await seedTenant(database.url, 'Stale shop', async (services, tenant) => {
      await services.auth.revokeApiKey(tenant.apiKeyId);
      await services.auth.revokeAccessToken(tenant.accessToken);
    });
    others = [await seedTenant(database.url, 'Shop B'), await seedTenant(database.url, 'Shop C')];
    const env = {
      DATABASE_URL: database.url,
      REDIS_URL: testRedisUrl!,
      TRUST_PROXY: '127.0.0.1',
      AUTH_FAILURES_PER_MINUTE: String(LIMIT),
      RATE_LIMIT_PER_SECOND: '100',
    };
    servers = await Promise.all([startServer(env), startServer(env)]);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await database?.drop();
  });

  const get = (server: ServerProcess, token: string) =>
    fetch(`${server.url}/v1/earning_rules`, {
      headers: {
        authorization: `Bearer ${token}`,
        'x-forwarded-for': address,
        'x-forwarded-proto': 'https',
      },
    });

  it('refuses the stale credentials past the limit on both, and serves every valid one at once', async () => {
    const [first, second] = servers as [ServerProcess, ServerProcess];
    // The first process sees only the stale key fail, the second only the stale token.
    for (let i = 0; i < LIMIT; i++) {
      const response = i % 2 === 0 ? await get(first, stale.apiKey) : await get(second, stale.accessToken);
      expect(response.status).toBe(401);
    }
    // The count is shared: the address is over the limit on both processes.
    for (const [server, token] of [
      [first, stale.apiKey],
      [second, stale.accessToken],
    ] as const) {
      const refused = await get(server, token);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }

    for (const server of servers) {
      for (const other of others) {
        for (const token of [other.apiKey, other.accessToken]) {
          const response = await get(server, token);
          expect(response.status, await response.text()).toBe(200);
        }
      }
    }

    // Each process knows, through Redis, what failed on the other: with the credential tables
    // out of the way, any look-up would be a 500.
    const db = openDb(database.url, { poolMax: 1 });
    try {
      await sql`alter table api_keys rename to api_keys_away`.execute(db.kysely);
      await sql`alter table access_tokens rename to access_tokens_away`.execute(db.kysely);
    } finally {
      await db.close();
    }
    for (const [server, token] of [
      [second, stale.apiKey],
      [first, stale.accessToken],
    ] as const) {
      const refused = await get(server, token);
      expect(refused.status, await refused.text()).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });
});
