import http from 'node:http';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { POINTS_EXPIRY_QUEUE } from '../../src/points-expiry/service.js';
import { JOBS_CHANNEL } from '../../src/storage/change-feed.js';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { fixedRule, unbalancedCustomers } from '../helpers/engine.js';
import { seedTenant, withServices } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';
import { openStore, type Reply, Servers, sendJson, tally } from './support.js';

// Points expiry under real concurrency (engine-contract.md, "Points expiry"), on this pass's
// engine: the expiry raced by purchases and activities of the same customers around the instant
// their balances fall due, through two server processes while this process runs passes too; and
// the recurring job of the servers themselves (two processes, and WORKERS=2), raced by this
// process: every due expiry and reminder happens once.

const DAY = 86_400_000;
const DAYS = 30;
const START = 500;
const PRICE = 100;
const ORDER_POINTS = 10;

const servers = new Servers();
let database: TestDatabaseUrl;
let tenant: Tenant;
let order = '';
let product = 0;
let store: Db;
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const RACE = { timeout: 90_000 };

beforeAll(async () => {
  database = await createTestDatabaseUrl();
  tenant = await seedTenant(database.url, 'Expiry race shop', async (services, t) => {
    const type = await services.activityTypes.create(t.accountId, { name: 'Order' });
    await services.earningRules.create(t.accountId, [fixedRule('Order', ORDER_POINTS, type.token)]);
    order = type.token;
    const made = await services.pointsProducts.create(t.accountId, {
      exchange_type: 'fixed',
      points_price: PRICE,
      reward: { name: '$5 off' },
    });
    product = (made as { id: number }).id;
    await services.pointsSettings.set(t.accountId, { points_expiry: { inactivity_days: DAYS } });
  });
  store = openStore(database.url);
});
afterEach(async () => servers.killAll());
afterAll(async () => {
  agent.destroy();
  await store?.close();
  await database?.drop();
});

/** `count` new members holding START points, last active at `lastActiveAt` (set by hand: the seed's time is now). */
async function members(prefix: string, count: number, lastActiveAt: number): Promise<number[]> {
  const ids = await withServices(database.url, async (services) => {
    const made: number[] = [];
    for (let i = 0; i < count; i++) {
      const id = (await services.customers.create(tenant.accountId, { email: `${prefix}-${i}@example.com` })).id;
      await services.pointsTransactions.adjust(tenant.accountId, {
        customer_id: id,
        points_change: START,
        description: 'Welcome',
      });
      made.push(id);
    }
    return made;
  });
  await store.kysely.updateTable('customers').set({ last_active_at: lastActiveAt }).where('id', 'in', ids).execute();
  return ids;
}

/** Each customer's points transactions in the order they were written (under the customer's lock). */
async function ledgers(ids: readonly number[]) {
  const rows = await store.kysely
    .selectFrom('points_transactions')
    .select(['id', 'customer_id', 'points_change', 'description'])
    .where('customer_id', 'in', ids)
    .orderBy('id')
    .execute();
  const by = new Map<number, { points_change: number; description: string }[]>(ids.map((id) => [id, []]));
  for (const row of rows) {
    by.get(Number(row.customer_id))!.push({ points_change: Number(row.points_change), description: row.description });
  }
  return by;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

describe(`points expiry under real concurrency (${testEngine})`, () => {
  it(
    'expiry raced by purchases and activities around the instant: never below 0, never after activity',
    RACE,
    async () => {
      const targets: ServerProcess[] = await Promise.all([
        servers.start({ DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' }),
        servers.start({ DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' }),
      ]);
      const COUNT = 24;
      const ids = await members('race', COUNT, Date.now());
      // Due at the same instant, and sent nothing: whatever the race does, a pass must expire them.
      const bystanders = await members('still', 3, Date.now());
      // Due 1.5 s from now: long enough for the requests to be set up around it.
      const dueAt = Date.now() + 1500;
      await store.kysely
        .updateTable('customers')
        .set({ last_active_at: dueAt - DAYS * DAY })
        .where('id', 'in', [...ids, ...bystanders])
        .execute();
      const replies: Reply[] = [];
      // Each customer: a purchase and an order, each sent at its own moment from 300 ms before the
      // instant to 1.2 s after, through either process: customers whose requests come late leave
      // the passes time to expire them first, even when a pass is slow in the burst (on two shared
      // cores a pass in the thick of it was seen to take 0.8 s).
      const requests = ids.flatMap((id, i) =>
        (['purchase', 'order'] as const).map(async (kind, k) => {
          await sleep(dueAt - 300 + ((i * 67 + k * 401) % 1500) - Date.now());
          const target = targets[(i + k) % 2]!;
          const reply =
            kind === 'purchase'
              ? await sendJson(
                  target.url,
                  'POST',
                  `/v1/points_products/${product}/purchase`,
                  tenant.apiKey,
                  {
                    customer_id: id,
                  },
                  { agent },
                )
              : await sendJson(
                  target.url,
                  'POST',
                  '/v1/activities',
                  tenant.apiKey,
                  {
                    activity: { token: order, customer_id: id, distinct_id: `race-order-${id}` },
                  },
                  { agent },
                );
          replies.push(reply);
        }),
      );
      // This process runs passes all the while, as a third process would.
      // The last pass starts after every request was sent, however slow the passes before it were.
      const passes = withServices(database.url, async (services) => {
        let expired = 0;
        let started: number;
        do {
          started = Date.now();
          expired += (await services.pointsExpiry.runOnce()).expired;
          await sleep(20);
        } while (started < dueAt + 1500);
        return expired;
      });
      await Promise.all(requests);
      const expiredHere = await passes;

      // Every answer is a success, or a purchase refused for want of points (after the expiry).
      expect(
        tally(replies, (r) => r.status),
        replies.find((r) => r.status !== 201 && r.status !== 422)?.body,
      ).toEqual(expect.objectContaining({ 201: expect.any(Number) }));
      for (const reply of replies.filter((r) => r.status !== 201)) {
        expect(reply.status, reply.body).toBe(422);
        expect(JSON.parse(reply.body).error.code).toBe('insufficient_points');
      }
      expect(await unbalancedCustomers(store.kysely)).toEqual([]);
      const byCustomer = await ledgers(ids);
      let expired = 0;
      for (const [id, ledger] of byCustomer) {
        const at = ledger.findIndex((entry) => entry.description === 'Points expired');
        expect(ledger.filter((entry) => entry.description === 'Points expired').length, `customer ${id}`).toBeLessThan(
          2,
        );
        if (at === -1) continue;
        expired++;
        // Expired before anything else of theirs in the race: only the seeded credit came first.
        expect(ledger.slice(0, at), `customer ${id}: ${JSON.stringify(ledger)}`).toEqual([
          { points_change: START, description: 'Welcome' },
        ]);
        expect(ledger[at]!.points_change).toBe(-START);
      }
      // The passes ran past the instant: the bystanders expired, once. How many racers a pass
      // reached before their requests depends on the machine's load (every one may be served
      // first under a loaded CI), so it is only counted.
      for (const [id, ledger] of await ledgers(bystanders)) {
        expect(ledger, `bystander ${id}`).toEqual([
          { points_change: START, description: 'Welcome' },
          { points_change: -START, description: 'Points expired' },
        ]);
      }
      expect(expiredHere).toBeLessThanOrEqual(expired + bystanders.length);
      console.log(`expiry race: ${expired} of ${COUNT} racing customers expired before their requests`);
    },
  );

  describe.each([
    { name: 'two server processes', env: [{}, {}] },
    { name: 'one server of WORKERS=2', env: [{ WORKERS: '2' }] },
  ])('the recurring job on $name, raced by this process', ({ name, env }) => {
    it('expires every due balance once and reminds every customer once', RACE, async () => {
      const tag = name.replaceAll(/\W+/g, '-');
      const due = await members(`due-${tag}`, 60, Date.now() - (DAYS + 1) * DAY);
      const soon = await members(`soon-${tag}`, 30, Date.now() - (DAYS - 5) * DAY);
      await Promise.all(
        env.map((extra) => servers.start({ DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0', ...extra })),
      );
      // The servers' runners made the recurring job at start, first due a minute later: due now.
      expect(
        await eventually(async () => {
          const moved = await store.kysely
            .updateTable('jobs')
            .set({ run_at: 0 })
            .where('unique_key', '=', POINTS_EXPIRY_QUEUE)
            .where('lease_owner', 'is', null)
            .executeTakeFirst();
          return Number(moved.numUpdatedRows) > 0;
        }, 20_000),
      ).toBe(true);
      if (testEngine === 'postgres')
        await sql`select pg_notify(${JOBS_CHANNEL}, current_schema())`.execute(store.kysely);
      await withServices(database.url, (services) => services.pointsExpiry.runOnce());

      // A server ran the job: its next run is set a pass's interval ahead.
      const ran = await eventually(async () => {
        const row = await store.kysely
          .selectFrom('jobs')
          .select('run_at')
          .where('unique_key', '=', POINTS_EXPIRY_QUEUE)
          .executeTakeFirst();
        return Number(row?.run_at) > Date.now() + 10 * 60_000;
      }, 30_000);
      expect(ran).toBe(true);
      const all = [...due, ...soon];
      const done = await eventually(async () => {
        const byCustomer = await ledgers(due);
        return [...byCustomer.values()].every((ledger) => ledger.some((e) => e.description === 'Points expired'));
      }, 30_000);
      expect(done).toBe(true);
      const byCustomer = await ledgers(all);
      for (const id of due) {
        expect(
          byCustomer.get(id)!.filter((e) => e.description === 'Points expired'),
          `customer ${id}`,
        ).toEqual([{ points_change: -START, description: 'Points expired' }]);
      }
      for (const id of soon) expect(byCustomer.get(id)!.some((e) => e.description === 'Points expired')).toBe(false);
      const reminders = await store.kysely
        .selectFrom('events')
        .select('data')
        .where('type', '=', 'customer.points_expiring')
        .execute();
      const reminded = reminders
        .map((row) => JSON.parse(row.data).customer.id as number)
        .filter((id) => all.includes(id));
      expect(reminded.sort((x, y) => x - y)).toEqual([...soon].sort((x, y) => x - y));
      expect(await unbalancedCustomers(store.kysely)).toEqual([]);
    });
  });
});
