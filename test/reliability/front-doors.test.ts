import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { loyalty } from '../helpers/cli.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { checkContractError, type Reply, Servers, send, TcpProxy } from './support.js';

// One database outage, every front door: /v1, the OAuth token and revocation endpoints (RFC 6749's
// body), the OAuth pages (HTML) and the CLI give the same answer class (unavailable: 503, or the
// CLI's `unavailable` code), and the server counts each in loyalty_database_errors_total.

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe.skipIf(testEngine !== 'postgres')('PostgreSQL cut off: the same answer at every front door', () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let proxy: TcpProxy;
  let tenant: Tenant;
  let server: ServerProcess;
  let through: string;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    tenant = await seedTenant(database.url, 'Front doors', (services, t) =>
      services.referralSettings.set(t.accountId, referralSettingsFixture),
    );
    const direct = new URL(database.url);
    proxy = new TcpProxy(direct.hostname, Number(direct.port || 5432));
    await proxy.listen();
    const url = new URL(database.url);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    through = url.toString();
    server = await servers.start({ DATABASE_URL: through, RATE_LIMIT_PER_SECOND: '0' });
  });
  afterAll(async () => {
    await servers.killAll();
    await proxy?.close();
    await database?.drop();
  });

  const databaseErrors = async () => {
    const metrics = await send(server.url, { path: '/metrics' });
    return Number(/^loyalty_database_errors_total (\d+)/m.exec(metrics.body)?.[1]);
  };

  /** Sends one request and returns it with how much the database-error metric grew meanwhile. */
  const counted = async (request: () => Promise<Reply>) => {
    const before = await databaseErrors();
    const reply = await request();
    return { reply, counted: (await databaseErrors()) - before };
  };

  it('answers 503 at /v1, the OAuth endpoints and pages, unavailable in the CLI, and counts every one', async () => {
    const authorize = `/oauth2/authorize?${new URLSearchParams({
      client_id: tenant.clientId,
      redirect_uri: 'https://app.example/callback',
      response_type: 'code',
      state: 's',
    })}`;
    // Before the cut, every door works.
    expect(
      (await send(server.url, { path: '/v1/referral_settings', headers: { authorization: `Bearer ${tenant.apiKey}` } }))
        .status,
    ).toBe(200);
    expect((await send(server.url, { path: authorize })).status).toBe(200);

    await proxy.cut('refuse');
    try {
      const v1 = await counted(() =>
        send(server.url, { path: '/v1/referral_settings', headers: { authorization: `Bearer ${tenant.apiKey}` } }),
      );
      expect(checkContractError(v1.reply, 'v1')).toBe('unavailable');
      expect(v1.counted).toBeGreaterThanOrEqual(1);

      for (const path of ['/oauth2/token', '/oauth2/revoke']) {
        const body =
          path === '/oauth2/token'
            ? `grant_type=refresh_token&refresh_token=ort_x&client_id=${tenant.clientId}&client_secret=cs_x`
            : `token=oa2_x&client_id=${tenant.clientId}&client_secret=cs_x`;
        const door = await counted(() => send(server.url, { method: 'POST', path, headers: FORM, body }));
        expect(door.reply.status, path).toBe(503);
        expect(door.reply.headers['retry-after'], path).toBe('1');
        expect(JSON.parse(door.reply.body), path).toEqual({
          error: 'temporarily_unavailable',
          error_description: expect.any(String),
        });
        expect(door.counted, path).toBeGreaterThanOrEqual(1);
      }

      const page = await counted(() => send(server.url, { path: authorize }));
      expect(page.reply.status).toBe(503);
      expect(page.reply.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.reply.body).toContain('try again shortly');
      expect(page.counted).toBeGreaterThanOrEqual(1);

      const cli = await loyalty(['accounts', 'list', '--json'], { DATABASE_URL: through });
      expect(cli.code).toBe(1);
      expect(cli.stdout).toBe('');
      expect(JSON.parse(cli.stderr).error).toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/ECONNREFUSED|unavailable/),
      });
    } finally {
      await proxy.restore();
    }
  });
});
