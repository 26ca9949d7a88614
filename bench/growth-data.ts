// The data of the growth scenarios (issue 33): a program after a year beside an empty one, in one
// database per engine. Building it takes minutes, so it is kept in bench/.cache (SQLite) or in a
// PostgreSQL database of its own, named by a hash of this file and the migrations: it is built
// again only when either changes. Each run measures a copy (a file copy; CREATE DATABASE …
// TEMPLATE), so what one run writes never reaches the next.
//
// The accounts, rules, key and product are made through the services. The bulk rows (customers,
// ledger, orders, codes, tiers) are generated inside the database by INSERT … SELECT, so nothing
// crosses the wire: faster than COPY or prepared inserts, and the same SQL on both engines. The
// ledger's triggers and secondary indexes are off meanwhile; their work is then done set-based
// (balances, points earned, days earned, placements) and the indexes built in one sorted pass each.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { systemClock } from '../src/clock.js';
import { createServices, type Services } from '../src/services.js';
import { openDb } from '../src/storage/db.js';
import { migrateToLatest } from '../src/storage/migrator.js';
import { refreshStatistics } from '../src/storage/statistics.js';
import { UnitOfWork } from '../src/storage/unit-of-work.js';
import { PG_URL, ROOT } from './processes.js';
import { seedAccount } from './seed.js';

/**
 * The size of each account: the large one is the issue's program after a year. One customer in
 * `codeEvery` holds a reward code: 100,000 in the large account, and a full page (100) in the
 * empty one, so that both accounts' fulfillment lists answer pages of the same length.
 */
export const SIZES = {
  empty: { rules: 50, customers: 100, loyalActivities: 100, codeEvery: 1 },
  large: { rules: 10_000, customers: 1_000_000, loyalActivities: 100_000, codeEvery: 10 },
} as const;
/** Ledger rows per customer: nine counted credits and an opening balance that does not count. */
const CREDITS_PER_CUSTOMER = 9;
/** Milestones of the seeded tiers (points earned run from 9 to 3,600, about 1,800 on average). */
const TIERS = [
  { name: 'Silver', milestone: 500 },
  { name: 'Gold', milestone: 2_000 },
  { name: 'Platinum', milestone: 3_000 },
];

const DAY_MS = 86_400_000;
const YEAR_MS = 365 * DAY_MS;
/** The loyal customer's activities, this far apart: 100,000 of them span a year. */
const LOYAL_GAP_MS = 315_000;

export interface GrowthAccount {
  accountId: number;
  apiKey: string;
  activityToken: string;
  productId: number;
  /** The first and last customer ids (consecutive). */
  firstCustomer: number;
  lastCustomer: number;
  /** The customer with `loyalActivities` orders, each counted by the rolling-limit rule. */
  loyalCustomer: number;
  /** A customer who holds a reward code. */
  customerWithCode: number;
}

export interface GrowthData {
  empty: GrowthAccount;
  large: GrowthAccount;
  /** Every seeded row is older than this (ms); the loyal customer's last order, 315 s before, is the newest. */
  end: number;
}

/** The cache's name: this file and the schema's migrations, hashed. */
function cacheKey(): string {
  const hash = createHash('sha256').update(readFileSync(join(ROOT, 'bench', 'growth-data.ts')));
  const migrations = join(ROOT, 'src', 'storage', 'migrations');
  for (const file of readdirSync(migrations).sort()) hash.update(readFileSync(join(migrations, file)));
  return hash.digest('hex').slice(0, 12);
}

/** One SQL text at a time, on the engine's own driver (the bulk work needs no query builder). */
type Exec = (text: string) => Promise<void>;

/**
 * A working copy of the growth data for `engine` (built first when the cache lacks it): its
 * database URL and what it holds.
 */
export async function growthData(
  engine: 'sqlite' | 'postgres',
  workDir: string,
  log: (line: string) => void,
): Promise<{ url: string; data: GrowthData }> {
  const key = cacheKey();
  return engine === 'sqlite' ? sqliteCopy(key, workDir, log) : postgresCopy(key, log);
}

async function sqliteCopy(key: string, workDir: string, log: (line: string) => void) {
  const cache = join(ROOT, 'bench', '.cache');
  const file = join(cache, `growth-${key}.db`);
  const sidecar = `${file}.json`;
  if (!existsSync(sidecar)) {
    mkdirSync(cache, { recursive: true });
    for (const old of readdirSync(cache).filter((name) => name.startsWith('growth-'))) rmSync(join(cache, old));
    const data = await build(`sqlite:${file}`, log, async (run) => {
      const raw = new SqliteDatabase(file);
      raw.pragma('synchronous = OFF');
      raw.pragma('cache_size = -1000000');
      try {
        await run(async (text) => void raw.exec(text), sqliteBulk(raw));
      } finally {
        raw.close();
      }
    });
    // Everything in the file itself, so that a copy of the file is the whole database.
    const raw = new SqliteDatabase(file);
    raw.pragma('wal_checkpoint(TRUNCATE)');
    raw.close();
    // Written last: a build that stopped part-way has none, and is built again.
    writeFileSync(sidecar, JSON.stringify(data));
  } else log(`  growth data: cached (${file})`);
  const copy = join(workDir, 'growth.db');
  copyFileSync(file, copy);
  return { url: `sqlite:${copy}`, data: JSON.parse(readFileSync(sidecar, 'utf8')) as GrowthData };
}

/**
 * Bulk mode on SQLite: the ledger's and activities' triggers dropped, and the ledger's secondary
 * indexes (built again at the end, each in one sorted pass); `on` puts them back as they were.
 */
function sqliteBulk(raw: SqliteDatabase.Database): Bulk {
  const saved = raw
    .prepare(
      `select sql from sqlite_master where sql is not null and (
         (type = 'trigger' and tbl_name in ('points_transactions', 'activities'))
         or (type = 'index' and tbl_name = 'points_transactions'))`,
    )
    .all() as { sql: string }[];
  const names = raw
    .prepare(
      `select type, name from sqlite_master where sql is not null and (
         (type = 'trigger' and tbl_name in ('points_transactions', 'activities'))
         or (type = 'index' and tbl_name = 'points_transactions'))`,
    )
    .all() as { type: string; name: string }[];
  return {
    off: async () => {
      for (const { type, name } of names) raw.exec(`drop ${type} ${name}`);
    },
    on: async () => {
      for (const { sql } of saved) raw.exec(sql);
    },
  };
}

/** Bulk mode on PostgreSQL: the same, with the triggers disabled rather than dropped. */
async function postgresBulk(client: pg.Client): Promise<Bulk> {
  const { rows } = await client.query<{ indexname: string; indexdef: string }>(
    `select indexname, indexdef from pg_indexes
     where schemaname = current_schema() and tablename = 'points_transactions'
       and indexname not in (select conname from pg_constraint)`,
  );
  const exec = async (text: string) => void (await client.query(text));
  return {
    off: async () => {
      await exec('alter table points_transactions disable trigger user; alter table activities disable trigger user');
      for (const { indexname } of rows) await exec(`drop index ${indexname}`);
    },
    on: async () => {
      await exec(`set maintenance_work_mem = '1GB'`);
      for (const { indexdef } of rows) await exec(indexdef);
      await exec('alter table points_transactions enable trigger user; alter table activities enable trigger user');
    },
  };
}

function databaseUrl(name: string): string {
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function postgresCopy(key: string, log: (line: string) => void) {
  const cached = `loyalty_growth_${key}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(
      `select datname from pg_database where datname like 'loyalty_growth_%'`,
    );
    const names = rows.map((row) => row.datname);
    const hasData = names.includes(cached) && (await sidecarOf(cached)) !== undefined;
    if (!hasData) {
      for (const name of names) await admin.query(`drop database ${name}`);
      await admin.query(`create database ${cached}`);
      const data = await build(databaseUrl(cached), log, async (run) => {
        const client = new pg.Client({ connectionString: databaseUrl(cached) });
        await client.connect();
        try {
          await client.query('set synchronous_commit = off');
          const exec: Exec = async (text) => void (await client.query(text));
          await run(exec, await postgresBulk(client));
          // What autovacuum does on a real install (it is off on this machine): the visibility map
          // and hint bits, so that the first reads of a run do not write.
          await client.query('vacuum');
        } finally {
          await client.end();
        }
      });
      const client = new pg.Client({ connectionString: databaseUrl(cached) });
      await client.connect();
      try {
        // Written last: a build that stopped part-way has none, and is built again.
        await client.query('create table bench_growth (data text not null)');
        await client.query('insert into bench_growth (data) values ($1)', [JSON.stringify(data)]);
        await client.query('checkpoint');
      } finally {
        await client.end();
      }
    } else log(`  growth data: cached (database ${cached})`);
    await admin.query('drop database if exists loyalty_growth_run');
    await admin.query(`create database loyalty_growth_run template ${cached}`);
  } finally {
    await admin.end();
  }
  const data = (await sidecarOf('loyalty_growth_run'))!;
  return { url: databaseUrl('loyalty_growth_run'), data };
}

/** The growth data a PostgreSQL database holds, if it was built to the end. */
async function sidecarOf(database: string): Promise<GrowthData | undefined> {
  const client = new pg.Client({ connectionString: databaseUrl(database) });
  await client.connect();
  try {
    const { rows } = await client.query<{ data: string }>(`select data from bench_growth`);
    return rows[0] && (JSON.parse(rows[0].data) as GrowthData);
  } catch {
    return undefined;
  } finally {
    await client.end();
  }
}

/** Turns bulk mode off (triggers and the ledger's secondary indexes gone) and on again. */
interface Bulk {
  off: () => Promise<void>;
  on: () => Promise<void>;
}

/**
 * Builds the growth data at `url`: the accounts through the services, then the bulk rows through
 * `withRaw`'s connection, in bulk mode; the planner's statistics as the housekeeping job
 * would leave them.
 */
async function build(
  url: string,
  log: (line: string) => void,
  withRaw: (run: (exec: Exec, bulk: Bulk) => Promise<void>) => Promise<void>,
): Promise<GrowthData> {
  const started = Date.now();
  log('  growth data: building (kept for later runs)');
  const end = Math.floor(Date.now() / 1000) * 1000;
  const db = openDb(url, { sqliteSynchronous: 'NORMAL', poolMax: 2 });
  let data: GrowthData;
  try {
    await migrateToLatest(db);
    const services = createServices(db, { clock: systemClock, accessTokenTtlSeconds: 86_400 });
    data = {
      empty: await account(services, db, 'Growth empty', SIZES.empty, log),
      large: await account(services, db, 'Growth large', SIZES.large, log),
      end,
    };
  } finally {
    await db.close();
  }
  await withRaw(async (exec, bulk) => {
    await bulk.off();
    for (const name of ['empty', 'large'] as const) {
      const size = SIZES[name];
      const a = data[name];
      const step = async (what: string, text: string) => {
        const at = Date.now();
        await exec(text);
        log(`    ${name}: ${what} (${((Date.now() - at) / 1000).toFixed(1)} s)`);
      };
      await step('tiers', tiersSql(a, end));
      await step('ledger', ledgerSql(a, end));
      if (size.loyalActivities > 0) {
        await step('the loyal customer’s orders', loyalActivitiesSql(a, size.loyalActivities, end));
        await step('their credits', loyalCreditsSql(a));
      }
      await step('reward codes', codesSql(a, size.codeEvery, end));
    }
    const accounts = `${data.empty.accountId}, ${data.large.accountId}`;
    const at = Date.now();
    for (const text of aggregatesSql(accounts)) await exec(text);
    log(`    balances, days earned and tiers (${((Date.now() - at) / 1000).toFixed(1)} s)`);
    const indexed = Date.now();
    await bulk.on();
    log(`    the ledger's indexes and triggers back (${((Date.now() - indexed) / 1000).toFixed(1)} s)`);
  });
  const after = openDb(url, { poolMax: 2 });
  try {
    await refreshStatistics(after.kysely, new UnitOfWork(after.kysely, systemClock));
  } finally {
    await after.close();
  }
  log(`  growth data: built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return data;
}

/** An account with its customers (and an identity each), rules, product and tiers. */
async function account(
  services: Services,
  db: Parameters<typeof seedAccount>[1],
  name: string,
  size: { rules: number; customers: number; codeEvery: number },
  log: (line: string) => void,
): Promise<GrowthAccount> {
  const seeded = await seedAccount(services, db, name, size.rules, size.customers, log);
  const product = (await services.pointsProducts.create(seeded.accountId, {
    exchange_type: 'fixed',
    points_price: 100,
    reward: { name: '$1 off' },
  })) as { id: number };
  const first = seeded.customerId(0);
  return {
    accountId: seeded.accountId,
    apiKey: seeded.apiKey,
    activityToken: seeded.activityToken,
    productId: product.id,
    firstCustomer: first,
    lastCustomer: seeded.customerId(size.customers - 1),
    loyalCustomer: first,
    customerWithCode: first + size.codeEvery,
  };
}

/**
 * Each customer's ledger: nine counted credits at times spread over the year before `end` (a day
 * short of it), then an opening balance of a billion points that does not count as earned (so
 * that any customer can buy for as long as a run lasts), all in customer order.
 */
function ledgerSql(a: GrowthAccount, end: number): string {
  const span = (YEAR_MS - DAY_MS) / 1000;
  const entries = Array.from({ length: CREDITS_PER_CUSTOMER + 1 }, (_, k) => `select ${k} as k`).join(' union all ');
  return `
    insert into points_transactions
      (account_id, customer_id, points_change, description, occurred_at, created_at, updated_at, counts_as_earned)
    select account_id, id,
      case when k = ${CREDITS_PER_CUSTOMER} then 1000000000 else 1 + (cast(id as bigint) * 7 + k * 13) % 400 end,
      case when k = ${CREDITS_PER_CUSTOMER} then 'Opening balance' else 'Seeded credit' end,
      t, t, t,
      case when k = ${CREDITS_PER_CUSTOMER} then 0 else 1 end
    from (
      select c.account_id, c.id, e.k, ${end - YEAR_MS} + ((cast(c.id as bigint) * 7919 + e.k * 104729) % ${span}) * 1000 as t
      from customers c cross join (${entries}) e
      where c.account_id = ${a.accountId}
    ) s
    order by id, k`;
}

/** The loyal customer's orders, 315 s apart up to 315 s before `end`. */
function loyalActivitiesSql(a: GrowthAccount, count: number, end: number): string {
  return `
    insert into activities
      (account_id, customer_id, activity_type_id, distinct_id, properties, occurred_at, created_at, updated_at)
    select ${a.accountId}, ${a.loyalCustomer}, t.id, 'seeded-order-' || n,
      '{"amount":"' || (1 + n % 200) || '.00"}', at, at, at
    from (select n, ${end} - (${count} - n) * ${LOYAL_GAP_MS} as at from (${series(count)}) as numbers) s
    cross join activity_types t
    where t.account_id = ${a.accountId} and t.token = '${a.activityToken}'`;
}

/**
 * Their credits: "Order" for each (a point per unit spent), and "Order bonus" (three a day, a
 * rolling limit) for the first three of every 274 orders (a day and 8 s of them apart: never
 * four in a 24-hour window).
 */
function loyalCreditsSql(a: GrowthAccount): string {
  const rule = (name: string) =>
    `(select id from earning_rules where account_id = ${a.accountId} and name = '${name}')`;
  const orders = `
    select id, account_id, customer_id, occurred_at, created_at, updated_at,
      cast(substr(distinct_id, 14) as integer) as n
    from activities where customer_id = ${a.loyalCustomer}`;
  return `
    insert into points_transactions
      (account_id, customer_id, points_change, description, activity_id, earning_rule_id,
       occurred_at, created_at, updated_at, counts_as_earned)
    select account_id, customer_id, points, description, id, rule, occurred_at, created_at, updated_at, 1
    from (
      select o.*, 1 + o.n % 200 as points, 'Order' as description, ${rule('Order')} as rule, 0 as k
      from (${orders}) o
      union all
      select o.*, 50, 'Order bonus', ${rule('Order bonus')}, 1
      from (${orders}) o where o.n % 274 < 3
    ) credits
    order by id, k`;
}

/**
 * Reward codes for one customer in `every`, issued over the year: one in seven used, one in five
 * expiring 90 days after issue; the loyal customer's is the newest (issued at `end`).
 */
function codesSql(a: GrowthAccount, every: number, end: number): string {
  const span = (YEAR_MS - DAY_MS) / 1000;
  return `
    insert into reward_fulfillments
      (account_id, customer_id, name, code, image_url, fulfillment_status, usage_status, used_at, expires_at,
       created_at, updated_at)
    select account_id, id, '$1 off', 'GROWTH-' || id, '', 'issued',
      case when id % 7 = 0 then 'used' else 'unused' end,
      case when id % 7 = 0 then t + ${DAY_MS} end,
      case when id % 5 = 0 then t + ${90 * DAY_MS} end,
      t, t
    from (
      select account_id, id,
        case when id = ${a.loyalCustomer} then ${end}
             else ${end - YEAR_MS} + ((cast(id as bigint) * 104729) % ${span}) * 1000 end as t
      from customers
      where account_id = ${a.accountId} and (id - ${a.firstCustomer}) % ${every} = 0
    ) s
    order by id`;
}

/** The account's tiers (placed with the rest, below: through the service, each would place a million customers). */
function tiersSql(a: GrowthAccount, end: number): string {
  return `
    insert into vip_tiers (account_id, name, image_url, milestone, perks, created_at, updated_at)
    values ${TIERS.map((tier) => `(${a.accountId}, '${tier.name}', '', ${tier.milestone}, '[]', ${end}, ${end})`).join(', ')}`;
}

/** What the triggers would have done, set-based: balances, points earned, days earned, tiers. */
function aggregatesSql(accounts: string): string[] {
  return [
    `update customers
     set points_balance = s.balance, points_earned = s.earned, updated_at = s.last, last_active_at = s.last
     from (
       select customer_id, sum(points_change) as balance,
         sum(case when counts_as_earned = 1 and points_change > 0 then points_change else 0 end) as earned,
         max(created_at) as last
       from points_transactions where account_id in (${accounts}) group by customer_id
     ) s
     where customers.id = s.customer_id`,
    `insert into vip_earnings (customer_id, day, points)
     select customer_id, created_at / ${DAY_MS}, sum(points_change)
     from points_transactions
     where account_id in (${accounts}) and counts_as_earned = 1 and points_change > 0
     group by customer_id, created_at / ${DAY_MS}`,
    `update customers
     set vip_tier_id = (
       select t.id from vip_tiers t
       where t.account_id = customers.account_id and t.milestone <= customers.points_earned
       order by t.milestone desc limit 1
     ),
     vip_program_version = (select a.vip_program_version from accounts a where a.id = customers.account_id)
     where account_id in (${accounts})`,
    `update accounts set vip_placed_version = vip_program_version where id in (${accounts})`,
  ];
}

/** The numbers 1 to `count`, as a table `numbers (n)`. */
function series(count: number): string {
  return `with recursive s(n) as (select cast(1 as bigint) union all select n + 1 from s where n < ${count}) select n from s`;
}
