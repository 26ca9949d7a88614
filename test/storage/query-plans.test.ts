import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp, testEngine } from '../helpers/app.js';
import { fixedRule, program } from '../helpers/engine.js';
import { integersUpTo } from '../helpers/seed.js';

// Plans that cannot regress (issue 33): every statement the hot routes run (lists with each of
// their filters, a customer, activities, purchases, identities, rewards used and cancelled) is
// collected as it runs, then explained with its own parameters. None may read a large table
// whole, nor sort rows that no index orders: that is how a route that is fast on an empty
// account takes seconds on a program that has run for a year.
//
// The account holds SEEDED customers with a ledger entry each and SEEDED / 10 reward codes, and
// the statistics are gathered (as the service's upkeep gathers them, refreshStatistics), so the
// planners choose as they would on a real install; the statements then run for it. The bench
// measures the same plans on a million customers (docs/benchmarks.md).

/** Tables that grow with a program's customers and their history; the others are an account's settings. */
const LARGE = [
  'customers',
  'customer_identities',
  'points_transactions',
  'activities',
  'reward_fulfillments',
  'points_purchases',
  'events',
  'webhook_attempts',
  'vip_earnings',
  'vip_tier_changes',
  'referrals',
  'referral_clicks',
  'idempotency_keys',
  'jobs',
];

/** Rows past which a sort is a sort of the account rather than of a page. */
const LARGE_SORT = 1000;

/**
 * A list filtered by `updated_at_min` may read the rows the time matches by its index and sort
 * them (the plan for a recent time, which matches few), and walks ids instead when the time
 * matches many: the planner's choice on PostgreSQL, by its statistics; on SQLite the service
 * counts the matches first (src/pagination/since.ts) and sorts at most SINCE_RANGE_ROWS ids.
 * Customers' time index holds the minute of updated_at (the same plan, a minute coarser).
 */
const BOUNDED_SORT =
  /SEARCH (\w+) USING (?:COVERING )?INDEX \w+_updated(?:_minute)? \(account_id=\? AND updated_(?:at|minute)>\?\)/;

/** The account's customers (each with a ledger entry), written by one statement each. */
const SEEDED = 20_000;
const SEEDED_TABLES = ['customers', 'points_transactions', 'reward_fulfillments'];

let t: TestApp;
let a: Tenant;
const statements = new Map<string, readonly unknown[]>();
let collecting = false;

const request = async (method: 'GET' | 'POST', url: string, payload?: object, headers: object = {}) => {
  // create_or_update takes an app's access token; the rest an API key.
  const token = url.includes('customer_identities') ? a.accessToken : a.apiKey;
  const response = await t.app.inject({ method, url, headers: { ...bearer(token), ...headers }, payload });
  expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
  return response.json();
};

beforeAll(async () => {
  t = await createTestApp(
    {},
    {
      onQuery: (query) => {
        if (collecting && /^\s*(select|insert|update|delete|with)\b/i.test(query.sql) && !statements.has(query.sql)) {
          statements.set(query.sql, query.parameters);
        }
      },
    },
  );
  a = await createTenant(t.services);
  const { accountId } = a;
  await t.services.vipTiers.create(accountId, { name: 'Silver', milestone: 100 });
  const { token } = await program(t.services, accountId, (type) => [
    fixedRule('Order', 10, type, {
      earning_limit: { max: 50, type: 'rolling', rolling: { unit: 'day', unit_count: 1 } },
    }),
    fixedRule('Order, lifetime', 1, type, { earning_limit: { max: 1000, type: 'lifetime' } }),
    // A rolling limit above 100 is counted before its times are read (src/activities/service.ts).
    fixedRule('Order, many a day', 1, type, {
      earning_limit: { max: 500, type: 'rolling', rolling: { unit: 'day', unit_count: 1 } },
    }),
  ]);
  await seed(accountId, t.clock.now() - 24 * 60 * 60 * 1000);
  // The seeded tables analyzed (refreshStatistics would go by PostgreSQL's change counters, which
  // show a moment after the seeding committed); the others have no statistics, as a new table's,
  // which the planners read as larger than the few rows these requests put there.
  for (const table of SEEDED_TABLES) await sql`analyze ${sql.table(table)}`.execute(t.db.kysely);
  const [product] = (await t.services.pointsProducts.create(accountId, [
    { exchange_type: 'fixed', points_price: 20, reward: { name: '$5 off' } },
  ])) as { id: number }[];
  const since = new Date(t.clock.now()).toISOString();

  collecting = true;
  const activity = (email: string, distinct: string) =>
    request('POST', '/v1/activities', { activity: { token, customer_email: email, distinct_id: distinct } });
  await activity('jane@example.com', 'order-1');
  await activity('jane@example.com', 'order-2');
  await activity('new@example.com', 'order-3');
  const customers = (await request('GET', '/v1/customers')).customers as { id: number; email: string }[];
  const jane = customers.find((customer) => customer.email === 'jane@example.com')!.id;
  await request('POST', '/v1/customer_identities/create_or_update', {
    customer_identity: { distinct_id: 'crm-1', email: 'jane@example.com', first_name: 'Jane' },
  });
  await request('POST', '/v1/customer_identities/create_or_update', {
    customer_identity: { distinct_id: 'crm-1', email: 'jane@example.com', last_name: 'Doe' },
  });
  await request(
    'POST',
    '/v1/points_transactions',
    { points_transaction: { customer_id: jane, points_change: 100 } },
    { 'idempotency-key': 'k-1' },
  );
  const purchase = await request('POST', `/v1/points_products/${product!.id}/purchase`, { customer_id: jane });
  const code = purchase.points_purchase.reward_fulfillment.code as string;
  const second = await request('POST', `/v1/points_products/${product!.id}/purchase`, { customer_id: jane });
  await request('POST', `/v1/reward_fulfillments/${purchase.points_purchase.reward_fulfillment.id}/use`, {});
  await request('POST', `/v1/reward_fulfillments/${second.points_purchase.reward_fulfillment.id}/cancel`, {});

  const lists: string[] = [
    '/v1/customers',
    '/v1/customers?email=JANE@example.com',
    '/v1/customers?state=candidate',
    `/v1/customers?updated_at_min=${since}`,
    // Every seeded row: more than SINCE_RANGE_ROWS, the walk.
    '/v1/customers?updated_at_min=1970-01-01T00:00:00.000Z',
    '/v1/points_transactions',
    `/v1/points_transactions?customer_id=${jane}`,
    `/v1/points_transactions?updated_at_min=${since}`,
    '/v1/points_transactions?updated_at_min=1970-01-01T00:00:00.000Z',
    '/v1/reward_fulfillments',
    `/v1/reward_fulfillments?customer_id=${jane}`,
    `/v1/reward_fulfillments?code=${code}`,
    '/v1/reward_fulfillments?fulfillment_status=pending',
    '/v1/reward_fulfillments?usage_status=unused',
    '/v1/reward_fulfillments?usage_status=expired',
    `/v1/reward_fulfillments?updated_at_min=${since}`,
    '/v1/earning_rules',
    '/v1/points_products',
    '/v1/events',
  ];
  for (const url of lists) {
    const page = await request('GET', `${url}${url.includes('?') ? '&' : '?'}limit=1`);
    // The next page too: its cursor adds the id boundary.
    if (page.metadata?.next_cursor) {
      await request('GET', `${url}${url.includes('?') ? '&' : '?'}limit=1&cursor=${page.metadata.next_cursor}`);
    }
  }
  for (const url of [`/v1/customers/${jane}`, '/v1/vip_tiers']) await request('GET', url);
  collecting = false;
}, 120_000);

/** SEEDED customers of the account, changed at `at`, a ledger entry each, and a code for every tenth. */
async function seed(accountId: number, at: number) {
  const db = t.db.kysely;
  const numbers = integersUpTo(t.db.dialect, SEEDED);
  await sql`insert into customers (account_id, email, email_normalized, referral_code, created_at, updated_at)
    select ${accountId}, 'seed' || i || '@example.com', 'seed' || i || '@example.com', 'SEED' || i, ${at}, ${at}
    from (${numbers}) as numbers`.execute(db);
  await sql`insert into points_transactions
      (account_id, customer_id, points_change, description, occurred_at, created_at, updated_at, counts_as_earned)
    select account_id, id, 5, 'seed', ${at}, ${at}, ${at}, 1 from customers where account_id = ${accountId}`.execute(
    db,
  );
  await sql`insert into reward_fulfillments
      (account_id, customer_id, name, code, fulfillment_status, usage_status, created_at, updated_at)
    select account_id, id, 'seed', 'SEED' || id, 'issued', 'unused', ${at}, ${at}
    from customers where account_id = ${accountId} and id % 10 = 0`.execute(db);
}

afterAll(async () => t?.close());

/** The plan of `query` with its parameters, a line per step. */
async function explain(query: string, parameters: readonly unknown[]): Promise<string> {
  if (t.db.dialect === 'sqlite') {
    const { rows } = await t.db.kysely.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${query}`, [...parameters]),
    );
    return rows.map((row) => row.detail).join('\n');
  }
  const { rows } = await t.db.kysely.executeQuery<{ 'QUERY PLAN': string }>(
    CompiledQuery.raw(`explain ${query}`, [...parameters]),
  );
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}

/** What is wrong with the plan of `query`: a whole large table read, or a sort no index serves. */
function problems(query: string, plan: string): string[] {
  const found: string[] = [];
  // SQLite lists, in the plan of an INSERT … VALUES, a scan of each table whose foreign key names
  // the inserted table without an index; it runs only while deferred violations are pending, and
  // every constraint here is immediate.
  const checksOnly =
    testEngine === 'sqlite' && /^\s*insert\b[\s\S]*\bvalues\b/i.test(query) && !/\bselect\b/i.test(query);
  if (checksOnly) return found;
  for (const table of LARGE) {
    const scan =
      testEngine === 'sqlite'
        ? new RegExp(`^SCAN ${table}\\b`, 'm')
        : new RegExp(
            `Seq Scan on ${table}\\b|Index (Only )?Scan( Backward)? using (?!${table}_pkey)\\w+ on ${table}(?![^\\n]*\\n\\s+Index Cond)`,
          );
    if (scan.test(plan) || (testEngine === 'postgres' && walksIds(query, plan, table) === 'unbounded')) {
      found.push(`reads ${table} whole`);
    }
  }
  found.push(...unservedFilters(query, plan));
  if (testEngine === 'sqlite') {
    // SQLite does not estimate what it sorts: a sort counts when the rows come from a large table.
    const large = LARGE.some((table) => new RegExp(`^(SCAN|SEARCH) ${table}\\b`, 'm').test(plan));
    if (large && /USE TEMP B-TREE FOR/.test(plan) && !BOUNDED_SORT.test(plan)) found.push('sorts without an index');
  } else {
    // PostgreSQL's estimate of what it sorts: a few rows (one customer's, a page) cost nothing.
    for (const sort of plan.matchAll(/(?:Incremental )?Sort {2}\(cost=[^ ]+ rows=(\d+)/g)) {
      if (Number(sort[1]) > LARGE_SORT) found.push(`sorts ${sort[1]} rows without an index`);
    }
  }
  return found;
}

/**
 * How a plan reads `table` by its primary key with no condition: not at all; a `page` (a list in
 * id order with a LIMIT, whose filters PostgreSQL estimates to keep more than LARGE_SORT rows, so
 * that the walk stops a few rows past the page); or `unbounded` (the whole table, or most of it to
 * find a few rows).
 */
function walksIds(query: string, plan: string, table: string): 'no' | 'page' | 'unbounded' {
  const walk = new RegExp(
    `Index (?:Only )?Scan(?: Backward)? using ${table}_pkey on ${table} {2}\\(cost=\\S+ rows=(\\d+)[^\\n]*(\\n\\s+Index Cond)?`,
  ).exec(plan);
  if (!walk || walk[2] !== undefined) return 'no';
  return /order by "id"( desc| asc)? limit/i.test(query) && Number(walk[1]) > LARGE_SORT ? 'page' : 'unbounded';
}

/** Equality checks an index on the second column serves as well as one on the first would. */
const FOLLOWS: readonly [checked: string, by: string][] = [
  // A customer's rows are all one account's: the account is a check, not a selector.
  ['account_id', 'customer_id'],
  // An unused code is issued but for the few pending, cancelled or failed ones; an expired code's
  // selector is its expires_at, a range (the planner's choice, like updated_at_min's).
  ['fulfillment_status', 'usage_status'],
];

/**
 * A statement on one large table that compares columns with values (`"state" = ?`) must find its
 * rows by an index on those columns: one that reads the account's rows in id order and drops those
 * that differ would walk a million customers to find the few candidates. (A lookup by id or a
 * unique key reads one row, whatever else it checks.)
 */
function unservedFilters(query: string, plan: string): string[] {
  const table = /^\s*(?:select\b[\s\S]*?\bfrom|update|delete from)\s+"(\w+)"/i.exec(query)?.[1];
  if (!table || !LARGE.includes(table) || /\bjoin\b|\(\s*select\b/i.test(query)) return [];
  // The comparisons of its WHERE (an UPDATE's SET assigns, it does not filter).
  const where = query.slice(query.search(/\swhere\s/i));
  const compared = new Set([...where.matchAll(/"(\w+)" = (?:\?|\$\d+)/g)].map((match) => match[1]!));
  // A page in id order, walked by the primary key until it is full, where the filters keep most
  // rows (PostgreSQL's plan when they do, as when one account holds most of the table).
  if (walksIds(query, plan, table) === 'page') return [];
  const served = new Set<string>();
  let unique = false;
  if (testEngine === 'sqlite') {
    for (const line of plan.split('\n')) {
      const search = new RegExp(
        `^SEARCH ${table} USING (?:(?:COVERING )?INDEX (\\w+)|INTEGER PRIMARY KEY) \\(([^)]*)\\)`,
      ).exec(line);
      if (!search) continue;
      if (search[1] === undefined || search[1].startsWith('sqlite_autoindex')) unique ||= /=\?/.test(search[2]!);
      for (const term of search[2]!.split(' AND '))
        served.add(term.replace(/[=<>].*$/, '') === 'rowid' ? 'id' : term.replace(/[=<>].*$/, ''));
    }
  } else {
    // One table: every index condition of the plan is on it (a bitmap may AND several indexes).
    for (const condition of plan.matchAll(/Index Cond: ([^\n]*)/g)) {
      for (const match of condition[1]!.matchAll(/\((\w+) (?:[=<>]|= ANY)/g)) served.add(match[1]!);
    }
  }
  // A range on a time (updated_at_min, an expired code's expires_at) selects the rows; the equal
  // filters then check the few it finds.
  const ranged =
    testEngine === 'sqlite'
      ? new RegExp(`^SEARCH ${table} USING [^\\n]*\\b(?!id\\b)\\w+[<>]`, 'm').test(plan)
      : /Index Cond: [^\n]*\((?!id )\w+ [<>]/.test(plan);
  if (unique || ranged || served.has('id')) return [];
  const unserved = [...compared].filter(
    (column) => !served.has(column) && !FOLLOWS.some(([checked, by]) => checked === column && served.has(by)),
  );
  return unserved.length === 0 ? [] : [`filters ${table} on ${unserved.join(', ')} without an index`];
}

describe(`the plans of the hot routes' statements (${testEngine})`, () => {
  it('collected the statements of every route', () => {
    // Enough to know the routes ran: each list, the writes, the engine's limits.
    expect(statements.size).toBeGreaterThan(40);
    const all = [...statements.keys()].join('\n');
    for (const table of [
      'customers',
      'points_transactions',
      'reward_fulfillments',
      'customer_identities',
      'activities',
    ]) {
      expect(all).toContain(`"${table}"`);
    }
  });

  it('reads no large table whole and sorts nothing an index does not order', async () => {
    const failures: string[] = [];
    for (const [query, parameters] of statements) {
      const plan = await explain(query, parameters);
      const found = problems(query, plan);
      if (found.length > 0) failures.push(`${found.join(', ')}:\n  ${query}\n  ${plan.replaceAll('\n', '\n  ')}`);
    }
    expect(failures, failures.join('\n\n')).toEqual([]);
  });
});
