import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { loyalty } from '../helpers/cli.js';
import { expectPlacedWithHistory, placements, seedEarners, seededPoints } from '../helpers/placement.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { openStore, Servers, sendJson, tally } from './support.js';

// Tier changes under real concurrency (issue 33), on this pass's engine: `loyalty vip-tiers`
// commands in processes of their own, two at once, each placing the account's customers a batch
// per transaction, while two server processes (one of WORKERS=2) take credits for the same
// customers over real sockets. Afterwards every customer is in the tier its points earned give it,
// with a change row and one event per move, no acknowledged credit is lost, and the account is
// marked placed.

/** Several batches of the service's 200 per placement. */
const CUSTOMERS = 1_100;
/** Clients per server process, each posting one credit at a time. */
const CLIENTS = 4;
const CREDIT = 150;

const servers = new Servers();
let database: TestDatabaseUrl;
let tenant: Tenant;
let store: Db;
let targets: ServerProcess[] = [];
let ids: number[] = [];
const agent = new http.Agent({ keepAlive: true, maxSockets: 2 * CLIENTS });

beforeAll(async () => {
  database = await createTestDatabaseUrl();
  tenant = await seedTenant(database.url, 'Placement race shop');
  store = openStore(database.url);
  await seedEarners(store, tenant.accountId, CUSTOMERS, Date.now());
  ids = (await placements(store, tenant.accountId)).map((row) => row.id);
  const env = { DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' };
  targets = await Promise.all([servers.start(env), servers.start({ ...env, WORKERS: '2' })]);
}, 60_000);
afterAll(async () => {
  agent.destroy();
  await servers.killAll();
  await store?.close();
  await database?.drop();
});

const cli = (args: string[]) => loyalty([...args, '--json'], { DATABASE_URL: database.url });

/**
 * Posts credits of CREDIT points through every server, CLIENTS at a time each, to customers spread
 * over the account, until `done` settles (and at least 10 per client); answers the statuses.
 */
async function creditsUntil(done: Promise<unknown>): Promise<{ statuses: number[]; credited: Map<number, number> }> {
  let racing = true;
  void done.finally(() => {
    racing = false;
  });
  const statuses: number[] = [];
  const credited = new Map<number, number>();
  const client = async (server: ServerProcess, c: number) => {
    for (let i = 0; racing || i < 10; i++) {
      const customer = ids[(c * 7919 + i * 97) % ids.length]!;
      const reply = await sendJson(
        server.url,
        'POST',
        '/v1/points_transactions',
        tenant.apiKey,
        { points_transaction: { customer_id: customer, points_change: CREDIT } },
        { agent },
      );
      statuses.push(reply.status);
      if (reply.status === 201) credited.set(customer, (credited.get(customer) ?? 0) + CREDIT);
    }
  };
  await Promise.all(
    targets.flatMap((server, s) => Array.from({ length: CLIENTS }, (_, c) => client(server, s * CLIENTS + c))),
  );
  return { statuses, credited };
}

/** Fails unless each customer's points earned are its seeded points and every acknowledged credit. */
async function expectEveryCredit(credited: Map<number, number>, before: Map<number, number>): Promise<void> {
  const wrong = (await placements(store, tenant.accountId)).filter(
    (row) => Number(row.points_earned) !== (before.get(row.id) ?? 0) + (credited.get(row.id) ?? 0),
  );
  expect(wrong).toEqual([]);
}

const earnedNow = async () =>
  new Map((await placements(store, tenant.accountId)).map((row) => [row.id, Number(row.points_earned)]));

describe(`tier changes raced by credits through real processes (${testEngine})`, () => {
  it('two tiers created at once by two commands: every customer placed as their points say', async () => {
    const changes = Promise.all([
      cli(['vip-tiers', 'create', '--account', String(tenant.accountId), '--name', 'Silver', '--milestone', '300']),
      cli(['vip-tiers', 'create', '--account', String(tenant.accountId), '--name', 'Gold', '--milestone', '700']),
    ]);
    const { statuses, credited } = await creditsUntil(changes);
    for (const change of await changes) expect(change.code, change.stderr).toBe(0);
    expect(tally(statuses, (status) => status)).toEqual({ 201: statuses.length });
    await expectEveryCredit(credited, new Map(ids.map((id) => [id, seededPoints(id)])));
    await expectPlacedWithHistory(store, tenant.accountId);
    const tiers = (await changes).map((change) => change.json<{ name: string; milestone: number }>());
    expect(tiers.map(({ name, milestone }) => [name, milestone])).toEqual([
      ['Silver', 300],
      ['Gold', 700],
    ]);
  }, 120_000);

  it('a milestone moved and a tier deleted at once: every customer placed as their points say', async () => {
    const listed = await cli(['vip-tiers', 'list', '--account', String(tenant.accountId)]);
    expect(listed.code, listed.stderr).toBe(0);
    const byName = new Map(listed.json<{ id: number; name: string }[]>().map((tier) => [tier.name, tier.id]));
    const before = await earnedNow();
    const changes = Promise.all([
      cli(['vip-tiers', 'update', String(byName.get('Silver')), '--milestone', '900']),
      cli(['vip-tiers', 'delete', String(byName.get('Gold'))]),
    ]);
    const { statuses, credited } = await creditsUntil(changes);
    for (const change of await changes) expect(change.code, change.stderr).toBe(0);
    expect(tally(statuses, (status) => status)).toEqual({ 201: statuses.length });
    await expectEveryCredit(credited, before);
    await expectPlacedWithHistory(store, tenant.accountId);
    const after = await cli(['vip-tiers', 'list', '--account', String(tenant.accountId)]);
    expect(after.json<{ name: string; milestone: number }[]>().map(({ name, milestone }) => [name, milestone])).toEqual(
      [['Silver', 900]],
    );
    // A tenth of the customers earned 900 points in the seed alone: the moved tier is not empty.
    const silver = byName.get('Silver');
    expect((await placements(store, tenant.accountId)).some((row) => row.vip_tier_id === silver)).toBe(true);
  }, 120_000);
});
