import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { fixedRule, unbalancedCustomers } from '../helpers/engine.js';
import { seedTenant, withServices } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { burst, openStore, Servers, tally } from './support.js';

// A rolling earning limit under real concurrency (issue 27, item 13): a rule of at most 2 credits
// per day, 30 activities of one customer at once against a real server of WORKERS=2, on this
// pass's engine, repeated on fresh customers. Transactions take the activity's time before they
// wait for the customer's lock, so they commit out of time order; back-dated activities arrive
// out of time order by design. Either way every window of a day must hold at most 2 credits.

const PARALLEL = 30;
const ROUNDS = 5;
const MAX = 2;
const DAY_MS = 86_400_000;

const servers = new Servers();
let database: TestDatabaseUrl;
let tenant: Tenant;
let token = '';
let workers: ServerProcess;
let store: Db;
const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL * 2 });

beforeAll(async () => {
  database = await createTestDatabaseUrl();
  tenant = await seedTenant(database.url, 'Rolling shop', async (services, t) => {
    const type = await services.activityTypes.create(t.accountId, { name: 'Visit' });
    await services.earningRules.create(t.accountId, [
      fixedRule('Visit', 10, type.token, {
        earning_limit: { max: MAX, type: 'rolling', rolling: { unit: 'day', unit_count: 1 } },
      }),
    ]);
    token = type.token;
  });
  // A loaded machine (two cores, other suites beside this one) can take more than 20 s to start two workers.
  workers = await servers.start(
    { DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0', WORKERS: '2' },
    { timeoutMs: 60_000 },
  );
  store = openStore(database.url);
});

afterAll(async () => {
  agent.destroy();
  await store?.close();
  await servers.killAll();
  await database?.drop();
});

/** The times of the customer's credits, ascending. */
async function creditTimes(customerId: number): Promise<number[]> {
  const rows = await store.kysely
    .selectFrom('points_transactions')
    .select('occurred_at')
    .where('customer_id', '=', customerId)
    .orderBy('occurred_at')
    .execute();
  return rows.map((row) => Number(row.occurred_at));
}

/** The most credits any window of a day holds: the fullest one ends at a credit. */
function fullestDay(times: number[]): number {
  return Math.max(0, ...times.map((end) => times.filter((time) => time > end - DAY_MS && time <= end).length));
}

/** A spread of 0 to 239 seconds, the same on every run (activity `i` of round `round`). */
const secondsBack = (round: number, i: number) => (i * 7_919 + round * 104_729) % 240;

describe.each([
  { name: 'each at the time it is received', backDated: false },
  { name: 'two in three back-dated by up to 4 minutes, in no order', backDated: true },
])(
  `a rolling limit of ${MAX} per day under ${PARALLEL} parallel activities, WORKERS=2 (${testEngine}): $name`,
  ({ backDated }) => {
    it(`credits exactly ${MAX} in each of ${ROUNDS} rounds, and no day holds more`, async () => {
      const outcomes: { credits: number; fullestDay: number }[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const customerId = await withServices(database.url, async (services) => {
          const customer = await services.customers.create(tenant.accountId, {
            email: `round-${round}-${backDated ? 'back' : 'now'}@example.com`,
          });
          return customer.id;
        });
        const now = Date.now();
        const replies = await burst(
          [workers],
          PARALLEL,
          tenant.apiKey,
          (i) => ({
            path: '/v1/activities',
            body: {
              activity: {
                token,
                customer_id: customerId,
                distinct_id: `visit-${round}-${i}-${backDated}`,
                ...(backDated && i % 3 !== 0
                  ? { created_on_origin_at: new Date(now - secondsBack(round, i) * 1000).toISOString() }
                  : {}),
              },
            },
          }),
          { agent },
        );
        const refused = replies.filter((r) => r.status !== 201).map((r) => r.body);
        expect(
          tally(replies, (r) => r.status),
          refused.slice(0, 3).join('\n'),
        ).toEqual({ 201: PARALLEL });
        const answered = replies.filter((r) => r.json.activity.points_transactions.length > 0).length;
        const times = await creditTimes(customerId);
        expect(answered).toBe(times.length);
        outcomes.push({ credits: times.length, fullestDay: fullestDay(times) });
      }
      // Every round is run before judging, so that a failure shows how many rounds went wrong.
      expect(outcomes).toEqual(Array.from({ length: ROUNDS }, () => ({ credits: MAX, fullestDay: MAX })));
      expect(await unbalancedCustomers(store.kysely)).toEqual([]);
    }, 120_000);
  },
);
