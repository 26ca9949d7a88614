import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import type { CustomerIdentityResponse } from '../../src/customer-identities/schemas.js';
import { createServices } from '../../src/services.js';
import { openDb } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrator.js';
import { createTenant, createTestDatabaseUrl, type Tenant, testEngine } from '../helpers/app.js';
import { testRedisUrl } from '../helpers/redis.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';

// Races against real server processes over real sockets, on one database of this pass's engine
// (a SQLite file, or a PostgreSQL schema): one process; two processes on different ports sharing
// it (and sharing Redis, when TEST_REDIS_URL is set); one server running WORKERS=2 (on SQLite
// each process has its own connection competing for the file's write lock).

const PATH = '/v1/customer_identities/create_or_update';

let url: string;
let drop: (() => Promise<void>) | undefined;
let tenants: Tenant[];
let first: ServerProcess;
let second: ServerProcess;
let workers: ServerProcess;

beforeAll(async () => {
  ({ url, drop } = await createTestDatabaseUrl());
  const db = openDb(url);
  try {
    await migrateToLatest(db);
    const services = createServices(db, { clock: systemClock, accessTokenTtlSeconds: 3600 });
    tenants = [];
    for (let i = 0; i < 6; i++) tenants.push(await createTenant(services, `Race shop ${i}`));
  } finally {
    await db.close();
  }
  // LOG_LEVEL must be info: startServer waits for Fastify's "Server listening at" info line.
  // With Redis the limit is on but far above the race, so every request also goes through Redis.
  const env: Record<string, string> = testRedisUrl
    ? { DATABASE_URL: url, REDIS_URL: testRedisUrl, RATE_LIMIT_PER_SECOND: '100000', LOG_LEVEL: 'info' }
    : { DATABASE_URL: url, RATE_LIMIT_PER_SECOND: '0', LOG_LEVEL: 'info' };
  [first, second, workers] = await Promise.all([
    startServer(env),
    startServer(env),
    startServer({ ...env, WORKERS: '2' }),
  ]);
});

afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop(), workers?.stop()]);
  await drop?.();
});

/** POSTs one identity to one server; resolves with the status and body. */
async function send(
  server: ServerProcess,
  tenant: Tenant,
  identity: Record<string, unknown>,
): Promise<{ status: number; body: any }> {
  try {
    const response = await fetch(`${server.url}${PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ customer_identity: identity }),
    });
    return { status: response.status, body: await response.json() };
  } catch (error) {
    // Say why the server stopped answering, rather than only "fetch failed".
    const { exitCode, signalCode } = server.child;
    const tail = server.output().split('\n').slice(-20).join('\n');
    throw new Error(`POST to ${server.url} failed (server exit ${exitCode}, signal ${signalCode}):\n${tail}`, {
      cause: error,
    });
  }
}

/** What the account holds, read from the file the servers write. */
async function stored(accountId: number) {
  const db = openDb(url);
  try {
    const services = createServices(db, { clock: systemClock, accessTokenTtlSeconds: 3600 });
    return {
      customers: await services.customers.list(accountId),
      identities: await services.customerIdentities.listIdentities(accountId),
    };
  } finally {
    await db.close();
  }
}

/** How many responses had each status. */
function statuses(results: { status: number }[]): Record<number, number> {
  const tally: Record<number, number> = {};
  for (const { status } of results) tally[status] = (tally[status] ?? 0) + 1;
  return tally;
}

const identityOf = (result: { body: CustomerIdentityResponse }) => result.body.customer_identity;

describe.each([
  { name: 'one server process', servers: () => [first], parallel: 50, tenant: 0 },
  {
    name: `two server processes on different ports sharing one ${testEngine} database${testRedisUrl ? ' and Redis' : ''}`,
    servers: () => [first, second],
    parallel: 100,
    tenant: 2,
  },
  { name: `one server with WORKERS=2 on ${testEngine}`, servers: () => [workers], parallel: 100, tenant: 4 },
])('create_or_update under $name', ({ servers, parallel: PARALLEL, tenant: base }) => {
  const pick = (i: number) => servers()[i % servers().length]!;

  it(`${PARALLEL} parallel requests for one new distinct_id: one 201, the rest 200, one identity, no lost merge`, async () => {
    const tenant = tenants[base]!;
    // Each request brings its own email and property key: only the winner's email may make a
    // customer (a loser must leave none behind), and every key must survive the merges.
    const results = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) =>
        send(pick(i), tenant, { distinct_id: 'race-1', email: `user${i}@example.com`, properties: { [`k${i}`]: i } }),
      ),
    );
    expect(statuses(results)).toEqual({ 201: 1, 200: PARALLEL - 1 });
    expect(new Set(results.map((r) => identityOf(r).id)).size).toBe(1);
    expect(new Set(results.map((r) => identityOf(r).customer_id)).size).toBe(1);

    const { customers, identities } = await stored(tenant.accountId);
    expect(identities).toHaveLength(1);
    expect(Object.keys(identities[0]!.properties)).toHaveLength(PARALLEL);
    const winner = identityOf(results.find((r) => r.status === 201)!);
    expect(customers).toEqual([expect.objectContaining({ id: winner.customer_id, email: winner.email })]);
  });

  it(`${PARALLEL} parallel requests with ${PARALLEL} distinct_ids and one new email: one customer, all linked`, async () => {
    const tenant = tenants[base + 1]!;
    const results = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) =>
        send(pick(i), tenant, {
          distinct_id: `race-${i}`,
          // The same address, written differently each time.
          email: i % 2 === 0 ? 'Shared@Example.com' : ` shared@example.COM `,
        }),
      ),
    );
    expect(statuses(results)).toEqual({ 201: PARALLEL });
    const { customers, identities } = await stored(tenant.accountId);
    expect(customers).toHaveLength(1);
    expect(identities).toHaveLength(PARALLEL);
    expect(new Set(identities.map((i) => i.customer_id))).toEqual(new Set([customers[0]!.id]));
    expect(new Set(results.map((r) => identityOf(r).customer_id))).toEqual(new Set([customers[0]!.id]));
  });
});
