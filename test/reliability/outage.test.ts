import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';
import {
  CREATE_OR_UPDATE,
  checkContractError,
  openStore,
  type Reply,
  Servers,
  send,
  sendJson,
  TcpProxy,
} from './support.js';

// The database going away under a running server process. On PostgreSQL a TCP proxy between
// the server and the database is cut (connections reset, new ones refused or never answered)
// and restored: meanwhile the API answers 503 unavailable with Retry-After, never 500 and never
// a hang; /readyz says 503; afterwards the service recovers by itself. On SQLite, an embedded
// file, "unreachable" means another process holding the write lock past busy_timeout.

/** Longest a request may take to be answered while the database is away. */
const ANSWER_WITHIN_MS = 15_000;

function seed(url: string): Promise<Tenant> {
  return seedTenant(url, 'Outage shop', (services, tenant) =>
    services.referralSettings.set(tenant.accountId, referralSettingsFixture),
  );
}

/** One request to each API route, /readyz and /healthz, at once; each must be answered. */
async function probe(server: ServerProcess, tenant: Tenant, n: string) {
  const options = { timeoutMs: ANSWER_WITHIN_MS };
  const [settings, rules, write, ready, live] = await Promise.all([
    sendJson(server.url, 'GET', '/v1/referral_settings', tenant.apiKey, undefined, options),
    sendJson(server.url, 'GET', '/v1/earning_rules', tenant.apiKey, undefined, options),
    sendJson(
      server.url,
      'POST',
      CREATE_OR_UPDATE,
      tenant.accessToken,
      { customer_identity: { distinct_id: `outage-${n}`, email: `${n}@example.com` } },
      options,
    ),
    send(server.url, { path: '/readyz', ...options }),
    send(server.url, { path: '/healthz', ...options }),
  ]);
  return { settings, rules, write, ready, live };
}

describe.skipIf(testEngine !== 'postgres')('PostgreSQL unreachable behind a TCP proxy', () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let proxy: TcpProxy;
  let tenant: Tenant;
  let server: ServerProcess;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    tenant = await seed(database.url);
    const direct = new URL(database.url);
    proxy = new TcpProxy(direct.hostname, Number(direct.port || 5432));
    await proxy.listen();
    const through = new URL(database.url);
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    server = await servers.start({ DATABASE_URL: through.toString(), RATE_LIMIT_PER_SECOND: '0' });
  });
  afterAll(async () => {
    await servers.killAll();
    await proxy?.close();
    await database?.drop();
  });

  for (const mode of ['refuse', 'blackhole'] as const) {
    it(`answers 503 while the database ${mode === 'refuse' ? 'refuses connections' : 'never answers'}, then recovers by itself`, async () => {
      const before = await probe(server, tenant, `${mode}-before`);
      expect([before.settings.status, before.rules.status, before.write.status, before.ready.status]).toEqual([
        200, 200, 201, 200,
      ]);

      await proxy.cut(mode);
      const down = await probe(server, tenant, `${mode}-down`);
      for (const [name, reply] of Object.entries({
        settings: down.settings,
        rules: down.rules,
        write: down.write,
        ready: down.ready,
      })) {
        expect(checkContractError(reply, `${name} with the database ${mode}`), name).toBe('unavailable');
      }
      expect(down.live.status).toBe(200); // the process itself is fine

      await proxy.restore();
      // No restart: the pool reconnects on its own.
      const back = await eventually(async () => {
        const again = await probe(server, tenant, `${mode}-back-${Date.now()}`);
        return again.settings.status === 200 && again.write.status === 201 && again.ready.status === 200;
      }, 20_000);
      expect(back).toBe(true);

      // The write refused during the outage was not stored; the ones before and after were.
      const store = openStore(database.url);
      try {
        const { rows } = await sql<{ distinct_id: string }>`select distinct_id from customer_identities`.execute(
          store.kysely,
        );
        const stored = rows.map((r) => r.distinct_id);
        expect(stored).toContain(`outage-${mode}-before`);
        expect(stored).not.toContain(`outage-${mode}-down`);
      } finally {
        await store.close();
      }
    });
  }

  it('counts the database errors in /metrics', async () => {
    const metrics = await send(server.url, { path: '/metrics' });
    const count = Number(/^loyalty_database_errors_total (\d+)/m.exec(metrics.body)?.[1]);
    expect(count).toBeGreaterThan(0);
  });
});

describe.skipIf(testEngine !== 'sqlite')('SQLite write lock held by another process', () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let tenant: Tenant;
  let server: ServerProcess;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    tenant = await seed(database.url);
    server = await servers.start({ DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' });
  });
  afterAll(async () => {
    await servers.killAll();
    await database?.drop();
  });

  it('answers a write 503 unavailable once busy_timeout passes, keeps reading, and writes again after', async () => {
    const holder = new SqliteDatabase(database.url.slice('sqlite:'.length));
    try {
      holder.exec('begin immediate'); // the write lock, held as a stuck admin session would
      const reads = await sendJson(server.url, 'GET', '/v1/referral_settings', tenant.apiKey);
      expect(reads.status).toBe(200); // WAL: readers are not blocked by the writer
      const write = await sendJson(
        server.url,
        'POST',
        CREATE_OR_UPDATE,
        tenant.accessToken,
        { customer_identity: { distinct_id: 'locked', email: 'locked@example.com' } },
        { timeoutMs: ANSWER_WITHIN_MS },
      );
      expect(checkContractError(write, 'write while locked')).toBe('unavailable');
      holder.exec('rollback');
      // The busy wait held the event loop, so for a moment the overload check refuses too; then
      // writes go through again, by themselves.
      const replies: Reply[] = [];
      const written = await eventually(async () => {
        const after = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, tenant.accessToken, {
          customer_identity: { distinct_id: 'locked', email: 'locked@example.com' },
        });
        replies.push(after);
        return after.status === 201;
      }, 10_000);
      expect(written, JSON.stringify(replies.map((r) => r.status))).toBe(true);
      for (const refused of replies.slice(0, -1)) expect(checkContractError(refused)).toBe('unavailable');
    } finally {
      if (holder.inTransaction) holder.exec('rollback');
      holder.close();
    }
  });

  it('keeps answering while a write waits for the lock, and the write goes through once it is free', async () => {
    const holder = new SqliteDatabase(database.url.slice('sqlite:'.length));
    try {
      holder.exec('begin immediate');
      const order: string[] = [];
      // A write waiting for the lock must not stop the process: better-sqlite3 would sleep in its
      // busy handler, the process would answer nothing until the lock came free.
      const write = sendJson(server.url, 'POST', CREATE_OR_UPDATE, tenant.accessToken, {
        customer_identity: { distinct_id: 'waits', email: 'waits@example.com' },
      }).then((reply) => {
        order.push('write');
        return reply;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const health = await send(server.url, { path: '/healthz' });
      order.push('healthz');
      expect(health.status, health.body).toBe(200);
      const read = await sendJson(server.url, 'GET', '/v1/customers', tenant.apiKey);
      order.push('read');
      holder.exec('rollback');
      expect((await write).status).toBe(201);
      expect(order).toEqual(['healthz', 'read', 'write']);
      expect(read.status, read.body).toBe(200);
    } finally {
      if (holder.inTransaction) holder.exec('rollback');
      holder.close();
    }
  });
});
