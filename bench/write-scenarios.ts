// The data and the write scenarios of `npm run bench` and `npm run bench:profile`: an
// account of 52 rules and 1,000 customers with room to spend, ids started far apart so that a
// recorded statement's ids are told apart, and a body per request for each write route.
import { join } from 'node:path';
import { sql } from 'kysely';
import { systemClock } from '../src/clock.js';
import { createServices } from '../src/services.js';
import { openDb } from '../src/storage/db.js';
import { migrateToLatest } from '../src/storage/migrator.js';
import { freshPostgresSchema } from './processes.js';
import { type BenchAccount, seedAccount, seededDistinctId } from './seed.js';

/**
 * New rows get ids from here on, so an id a recorded statement returned is told apart from every
 * other number among the parameters (and replaced by the replay's own new id).
 */
export const ID_BASE = 10_000_000;
export const CUSTOMER_ID_BASE = 20_000_000;
/**
 * The seeded identities get ids from here: an update's recorded statements then name its identity
 * by an id the replay maps to its own identity's, as it does new rows' ids.
 */
const SEEDED_IDENTITY_ID_BASE = 30_000_000;
/** The benchmark's customers: CUSTOMER_ID_BASE + 1 and the 999 after it. */
export const CUSTOMERS = 1000;
/** The customer of a recorded request: replays spread over every customer, as the load does. */
export const customerOf = (i: number) => CUSTOMER_ID_BASE + 1 + (i % CUSTOMERS);
/** The distinct_id of customerOf(i)'s seeded identity. */
export const identityOf = (accountId: number | string, i: number) => seededDistinctId(accountId, (i % CUSTOMERS) + 1);
const ID_TABLES = [
  'customers',
  'customer_identities',
  'activities',
  'points_transactions',
  'points_purchases',
  'reward_fulfillments',
];

export interface Setup {
  account: BenchAccount;
  productId: number;
}

export async function prepare(
  engine: 'sqlite' | 'postgres',
  dir: string,
  log: (line: string) => void,
): Promise<{ url: string; setup: Setup }> {
  const url = engine === 'sqlite' ? `sqlite:${join(dir, 'limits.db')}` : await freshPostgresSchema('loyalty_limits');
  const db = openDb(url, { sqliteSynchronous: 'NORMAL', poolMax: 4 });
  try {
    await migrateToLatest(db);
    // Customers get ids from CUSTOMER_ID_BASE, their identities from SEEDED_IDENTITY_ID_BASE, rows
    // made later from ID_BASE: a recorded customer id, a returned id and any other number among the
    // parameters are told apart.
    const startIds = async (table: string, base: number) => {
      if (db.dialect === 'sqlite') {
        await sql`delete from sqlite_sequence where name = ${table}`.execute(db.kysely);
        await sql`insert into sqlite_sequence (name, seq) values (${table}, ${base})`.execute(db.kysely);
      } else {
        await sql`select setval(pg_get_serial_sequence(${table}, 'id'), ${base})`.execute(db.kysely);
      }
    };
    await startIds('customers', CUSTOMER_ID_BASE);
    await startIds('customer_identities', SEEDED_IDENTITY_ID_BASE);
    const services = createServices(db, { clock: systemClock, accessTokenTtlSeconds: 86_400 });
    // 52 rules: the first page of 50 is the 14 KB page.
    const account = await seedAccount(services, db, 'Limits', 50, 1000, log);
    const product = (await services.pointsProducts.create(account.accountId, {
      exchange_type: 'fixed',
      points_price: 100,
      reward: { name: '$1 off' },
    })) as { id: number };
    // Every customer can buy for as long as the benchmark runs.
    const now = Date.now();
    await sql`insert into points_transactions (account_id, customer_id, points_change, description, occurred_at, created_at, updated_at)
      select account_id, id, 1000000000000, 'Benchmark balance', ${now}, ${now}, ${now}
      from customers where account_id = ${account.accountId}`.execute(db.kysely);
    for (const table of ID_TABLES) await startIds(table, ID_BASE);
    return { url, setup: { account, productId: product.id } };
  } finally {
    await db.close();
  }
}

const BODIES = 60_000;

/** The write routes, each with its bodies: every request a new identity, order or purchase. */
export function writeScenarios(setup: Setup) {
  const { account, productId } = setup;
  const many = (make: (n: number) => unknown) => () =>
    Array.from({ length: BODIES }, (_, n) => JSON.stringify(make(n)));
  return [
    {
      name: 'create_or_update (half new)',
      path: '/v1/customer_identities/create_or_update',
      token: account.accessToken,
      body: (n: number, unique: string) => ({
        customer_identity:
          n % 2 === 0
            ? {
                distinct_id: `new-${unique}`,
                email: `new-${unique}@bench.example`,
                first_name: 'New',
                properties: { n },
              }
            : {
                distinct_id: account.existingDistinctIds(n * 7919),
                email: `updated-${n}@bench.example`,
                properties: { n },
              },
      }),
      many,
    },
    {
      name: 'activities (new orders, 2 rules)',
      path: '/v1/activities',
      token: account.apiKey,
      body: (n: number, unique: string) => ({
        activity: {
          token: account.activityToken,
          customer_id: account.customerId(n * 7919),
          distinct_id: `order-${unique}`,
          properties: { amount: `${(n % 500) + 1}.${String(n % 100).padStart(2, '0')}` },
        },
      }),
      many,
    },
    {
      name: 'purchases (fixed, 100 points)',
      path: `/v1/points_products/${productId}/purchase`,
      token: account.apiKey,
      body: (n: number) => ({ customer_id: account.customerId(n * 7919) }),
      many,
    },
  ];
}
