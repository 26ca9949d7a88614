import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { loyalty } from '../helpers/cli.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { assertRedisReachable, testRedisUrl } from '../helpers/redis.js';
import { withServices } from '../helpers/seed.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';

// Two real server processes on one database and one Redis: what one knows, the other must too.
describe.skipIf(!testRedisUrl)(`two server processes sharing one database (${testEngine}) and Redis`, () => {
  let database: TestDatabaseUrl;
  let servers: ServerProcess[] = [];
  let tenant: Tenant;
  const limit = 5;

  beforeAll(async () => {
    await assertRedisReachable(testRedisUrl!);
    database = await createTestDatabaseUrl();
    tenant = await withServices(database.url, async (services) => {
      const t = await createTenant(services);
      await services.referralSettings.set(t.accountId, referralSettingsFixture);
      return t;
    });
    const env = {
      DATABASE_URL: database.url,
      REDIS_URL: testRedisUrl!,
      RATE_LIMIT_PER_SECOND: String(limit),
      LOG_LEVEL: 'info',
    };
    servers = await Promise.all([startServer(env), startServer(env)]);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await database?.drop();
  });

  const get = (server: ServerProcess, token: string) =>
    fetch(`${server.url}/v1/referral_settings`, { headers: { authorization: `Bearer ${token}` } });

  it('limits a credential across both processes as if they were one', async () => {
    const { key } = await withServices(database.url, (s) => s.auth.createApiKey(tenant.accountId));
    // 20 requests, alternating between the processes, well inside one second.
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => get(servers[i % 2]!, key).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(limit);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20 - limit);
  });

  // Each process keeps a credential it has read for up to 500 ms: both are used first, so both
  // hold it when the CLI (a third process) revokes it.
  const refusedWithinOneSecond = async (credential: string, revoke: string[]) => {
    for (const server of servers) expect((await get(server, credential)).status).toBe(200);
    const revoked = await loyalty([...revoke, '--json'], { DATABASE_URL: database.url });
    expect(revoked.code).toBe(0);
    const revokedAt = Date.now();
    for (const server of servers) {
      // Poll until refused; the contract's bound is 1 second after the revocation.
      let status = 200;
      while (status !== 401 && Date.now() - revokedAt < 1000) status = (await get(server, credential)).status;
      expect(status).toBe(401);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() - revokedAt) + 50));
    for (const server of servers) expect((await get(server, credential)).status).toBe(401);
  };

  it('refuses a key revoked through the CLI on both processes within 1 second', async () => {
    const key = await withServices(database.url, (s) => s.auth.createApiKey(tenant.accountId));
    await refusedWithinOneSecond(key.key, ['api-keys', 'revoke', String(key.id)]);
  });

  it('refuses an access token revoked through the CLI on both processes within 1 second', async () => {
    const token = await withServices(database.url, (s) =>
      s.auth.issueAccessToken({ accountId: tenant.accountId, clientId: tenant.clientId }),
    );
    await refusedWithinOneSecond(token.access_token, ['tokens', 'revoke', token.access_token]);
  });
});
