// The growth scenarios of `npm run bench` (issue 33): each route on the program after a year
// (1,000,000 customers, 10,000,000 ledger entries, 100,000 reward codes, a customer with 100,000
// orders, 10,000 rules) against the same route on an empty account, on one server, in one run;
// then a VIP tier change over the million customers while writes go on. The data: bench/growth-data.ts.
import { spawn } from 'node:child_process';
import pg from 'pg';
import { systemClock } from '../../src/clock.js';
import { createServices } from '../../src/services.js';
import { openDb } from '../../src/storage/db.js';
import { type GrowthAccount, type GrowthData, growthData } from '../growth-data.js';
import { PG_URL, ROOT, startService } from '../processes.js';
import { MARK, type Scope, type Statement } from '../replay.js';
import { postAs, record, withApp } from './capture.js';
import { pgbenchScript, postgresCeiling, sqliteCeiling } from './ceilings.js';
import { type Figures, type Load, measure, median, type Row, settle, wrk } from './measure.js';
import { DATA, log, RUNS, wanted } from './settings.js';

/** Each growth measurement is shorter than the main scenarios' (there are forty of them per engine). */
const TIMING = { warmup: 1, duration: 4 };
/** A read's run over one connection (GrowthRow.alone), seconds. */
const ALONE_SECONDS = 3;
/** The writes that go on during the tier change: fewer connections than the throughput runs. */
const TIER_CHANGE_CONNECTIONS = 10;
/** Their figures are taken in slices this long, for as long as the tier change runs. */
const SLICE_SECONDS = 2;

export interface GrowthRow {
  name: string;
  kind: 'read' | 'write';
  empty: Row;
  large: Row;
  /**
   * A write's statements, recorded from one request on each account and replayed alone with one
   * durable commit each (better-sqlite3 in a loop, or pgbench at the same concurrency), over the
   * account's customers as the load spreads: per second, on each. How much the database's own work
   * bends with the data, beside how much the route does.
   */
  database?: { empty: number; large: number };
  /**
   * A read on the large account over one connection: a request's own time. At 50 connections the
   * server is saturated and each request also waits behind the 49 others, whatever the data size.
   */
  alone?: Figures;
}

export interface TierChange {
  /** The CLI's last progress line: customers placed and moved. */
  progress: string;
  progressLines: number;
  seconds: number;
  /** The same writes before the change, and during it (worst slice), as wrk saw them. */
  before: Figures;
  during: { p99: number; max: number; rps: number; slices: number };
}

export interface GrowthReport {
  rows: GrowthRow[];
  tierChange?: TierChange;
}

/** A write for any customer of the account: its path and its body for the load's request n. */
interface WriteRequest {
  path: (a: GrowthAccount) => string;
  /** `unique` is new for every request of the run; `set` numbers the account's body lists (nextSet). */
  body: (a: GrowthAccount, n: number, unique: string, set: number) => unknown;
  /** Request n's customer, when the write is replayed alone and it is not anyCustomer. */
  customer?: (a: GrowthAccount, n: number) => number;
}

interface Scenario {
  name: string;
  kind: 'read' | 'write';
  load: (base: string, a: GrowthAccount) => Load;
  /** A write whose statements are also replayed alone (GrowthRow.database). */
  request?: WriteRequest;
}

const bearer = (a: GrowthAccount) => ({ authorization: `Bearer ${a.apiKey}` });
/** create_or_update takes only an app's access token: one per account, issued for this run (a cached one would expire). */
const tokens = new Map<number, string>();
const iso = (ms: number) => new Date(ms).toISOString();
const BODIES = 60_000;
/** An id of first…last for any integer, spread over all of them (7,919 is prime: each once in every count). */
const spread = (first: number, last: number, n: number) => first + ((n * 7919) % (last - first + 1));
/** A customer of the account for any integer, spread over all of them. */
const anyCustomer = (a: GrowthAccount, n: number) => spread(a.firstCustomer, a.lastCustomer, n);

/** Each account's body lists so far: every run of a write, and every request recorded, sends a new one. */
const sets = new Map<number, number>();
const nextSet = (a: GrowthAccount) => {
  const set = (sets.get(a.accountId) ?? 0) + 1;
  sets.set(a.accountId, set);
  return set;
};

/**
 * An order for any customer but the loyal one (whose seeded history fills its days), and its time:
 * the same work on both accounts, each order its customer's first in a day, so that both rules
 * credit it (the seed's "Order bonus" earns at most 3 times a day). Undated, the empty account's
 * 100 customers would use up their day's bonuses within the first few hundred orders, and the
 * large account's million never: one credit against two. So the order is dated back a day and a
 * minute for every pass over the account's customers (each customer once a pass: spread), and
 * for every body set before it.
 */
const ORDERS_FROM = Date.now();
const PASS_MS = 86_400_000 + 60_000;
const orderCustomer = (a: GrowthAccount, n: number) => spread(a.firstCustomer + 1, a.lastCustomer, n);
const anyOrder = (a: GrowthAccount, n: number, set: number) => {
  const customers = a.lastCustomer - a.firstCustomer;
  const pass = (set - 1) * Math.ceil(BODIES / customers) + Math.floor(n / customers);
  return { customer_id: orderCustomer(a, n), created_on_origin_at: iso(ORDERS_FROM - pass * PASS_MS) };
};

/** The routes, reads first: a write changes updated_at, which the reads' filters select by. */
function scenarios(data: GrowthData): Scenario[] {
  const get =
    (path: (a: GrowthAccount) => string) =>
    (base: string, a: GrowthAccount): Load => ({ url: `${base}${path(a)}`, headers: bearer(a) });
  const post =
    ({ path, body }: WriteRequest) =>
    (base: string, a: GrowthAccount): Load => ({
      url: `${base}${path(a)}`,
      method: 'POST',
      headers: bearer(a),
      bodies: (run) => {
        const set = nextSet(a);
        return Array.from({ length: BODIES }, (_, n) => JSON.stringify(body(a, n, `${run}-${n}`, set)));
      },
    });
  // What updated_at_min matches: no row (after the newest), one (the newest), every row.
  const times = { none: iso(data.end + 1000), one: iso(data.end - 315_000), all: iso(0) };
  const codeTimes = { none: iso(data.end + 1000), one: iso(data.end), all: iso(0) };
  const reads: Scenario[] = [
    { name: 'GET /v1/customers', kind: 'read', load: get(() => '/v1/customers?limit=50') },
    ...(['none', 'one', 'all'] as const).map((match) => ({
      name: `GET /v1/customers?updated_at_min= (matches ${match})`,
      kind: 'read' as const,
      load: get(() => `/v1/customers?limit=50&updated_at_min=${times[match]}`),
    })),
    { name: 'GET /v1/customers?state=member', kind: 'read', load: get(() => '/v1/customers?limit=50&state=member') },
    {
      name: 'GET /v1/customers?state=disabled',
      kind: 'read',
      load: get(() => '/v1/customers?limit=50&state=disabled'),
    },
    { name: 'GET /v1/customers/{id}', kind: 'read', load: get((a) => `/v1/customers/${a.loyalCustomer}`) },
    {
      name: 'GET /v1/points_transactions?customer_id= (10 entries)',
      kind: 'read',
      load: get((a) => `/v1/points_transactions?limit=50&customer_id=${a.customerWithCode}`),
    },
    {
      name: 'GET /v1/points_transactions?customer_id= (the loyal customer)',
      kind: 'read',
      load: get((a) => `/v1/points_transactions?limit=50&customer_id=${a.loyalCustomer}`),
    },
    ...(['none', 'one', 'all'] as const).map((match) => ({
      name: `GET /v1/points_transactions?updated_at_min= (matches ${match})`,
      kind: 'read' as const,
      load: get(() => `/v1/points_transactions?limit=50&updated_at_min=${times[match]}`),
    })),
    {
      name: 'GET /v1/reward_fulfillments?customer_id=',
      kind: 'read',
      load: get((a) => `/v1/reward_fulfillments?limit=50&customer_id=${a.customerWithCode}`),
    },
    ...(['none', 'one', 'all'] as const).map((match) => ({
      name: `GET /v1/reward_fulfillments?updated_at_min= (matches ${match})`,
      kind: 'read' as const,
      load: get(() => `/v1/reward_fulfillments?limit=50&updated_at_min=${codeTimes[match]}`),
    })),
    { name: 'GET /v1/earning_rules?limit=50', kind: 'read', load: get(() => '/v1/earning_rules?limit=50') },
  ];
  const order = (whose: (a: GrowthAccount, n: number, set: number) => object): WriteRequest => ({
    path: () => '/v1/activities',
    body: (a, n, unique, set) => ({
      activity: {
        token: a.activityToken,
        ...whose(a, n, set),
        distinct_id: `growth-order-${unique}`,
        properties: { amount: `${(n % 500) + 1}.00` },
      },
    }),
  });
  /** A write for any customer, whose statements are replayed alone too. */
  const replayed = (name: string, request: WriteRequest): Scenario => ({
    name,
    kind: 'write',
    load: post(request),
    request,
  });
  const writes: Scenario[] = [
    replayed('POST /v1/activities (any customer)', { ...order(anyOrder), customer: orderCustomer }),
    {
      name: 'POST /v1/activities (the loyal customer)',
      kind: 'write',
      load: post(order((a) => ({ customer_id: a.loyalCustomer }))),
    },
    replayed('POST purchase (any customer)', {
      path: (a) => `/v1/points_products/${a.productId}/purchase`,
      body: (a, n) => ({ customer_id: anyCustomer(a, n) }),
    }),
    replayed('POST /v1/points_transactions (any customer)', {
      path: () => '/v1/points_transactions',
      body: (a, n) => ({ points_transaction: { customer_id: anyCustomer(a, n), points_change: 10 } }),
    }),
    {
      name: 'POST create_or_update (half new)',
      kind: 'write',
      load: withToken(
        post({
          path: () => '/v1/customer_identities/create_or_update',
          body: (a, n, unique) => ({
            customer_identity:
              n % 2 === 0
                ? { distinct_id: `growth-new-${unique}`, email: `growth-new-${unique}@bench.example` }
                : {
                    distinct_id: `a${a.accountId}-${spread(1, a.lastCustomer - a.firstCustomer + 1, n)}`,
                    email: `growth-updated-${n}@bench.example`,
                  },
          }),
        }),
      ),
    },
  ];
  return [...reads, ...writes];
}

/** A load sent with the account's app token instead of its API key. */
function withToken(load: (base: string, a: GrowthAccount) => Load) {
  return (base: string, a: GrowthAccount): Load => ({
    ...load(base, a),
    headers: { authorization: `Bearer ${tokens.get(a.accountId)}` },
  });
}

/** Issues each account an app's access token for this run (see `tokens`). */
async function issueTokens(url: string, data: GrowthData): Promise<void> {
  const db = openDb(url, { poolMax: 1 });
  try {
    const services = createServices(db, { clock: systemClock, accessTokenTtlSeconds: 86_400 });
    for (const a of [data.empty, data.large]) {
      const app = await services.apps.create({ name: `Growth run ${a.accountId}` });
      const token = await services.auth.issueAccessToken({ accountId: a.accountId, clientId: app.client_id });
      tokens.set(a.accountId, token.access_token);
    }
  } finally {
    await db.close();
  }
}

/** The growth scenarios on `engine`: every route on both accounts, then the tier change. */
export async function growthFigures(engine: 'sqlite' | 'postgres'): Promise<GrowthReport> {
  const all = (data: GrowthData) => scenarios(data).filter((s) => wanted(`growth: ${s.name}`));
  const database = engine === 'postgres';
  log(`== ${engine}: growth data`);
  const { url, data } = await growthData(engine, DATA, log);
  await issueTokens(url, data);
  const rows: GrowthRow[] = [];
  let tierChange: TierChange | undefined;
  const server = await startService(url, 1);
  try {
    log(`== ${engine}: growth scenarios (the large account against the empty one)`);
    for (const scenario of all(data)) {
      const [empty, large] = [
        await measure(
          `growth: ${scenario.name}, empty`,
          scenario.load(server.url, data.empty),
          server.pids,
          database,
          TIMING,
        ),
        await measure(
          `growth: ${scenario.name}, large`,
          scenario.load(server.url, data.large),
          server.pids,
          database,
          TIMING,
        ),
      ];
      if (!empty || !large) continue;
      const alone =
        scenario.kind === 'read'
          ? await wrk(scenario.load(server.url, data.large), ALONE_SECONDS, server.pids, database, 1)
          : undefined;
      if (alone)
        log(
          `    growth: ${scenario.name}, large, one connection: p50 ${alone.p50.toFixed(2)} ms, p99 ${alone.p99.toFixed(2)} ms`,
        );
      rows.push({ name: scenario.name, kind: scenario.kind, empty, large, ...(alone ? { alone } : {}) });
    }
    const replays = all(data).filter((s) => s.request && rows.some((row) => row.name === s.name));
    if (replays.length > 0) {
      const alone = await statementsAlone(engine, url, data, replays);
      for (const row of rows) row.database = alone.get(row.name) ?? row.database;
    }
    if (wanted('growth: tier change')) tierChange = await measureTierChange(url, server, data.large, database);
  } finally {
    await server.stop();
    if (database) await dropCopy(url);
  }
  return { rows, tierChange };
}

/** A number that is no id, standing for the request's customer in a recorded statement (Scope.isCustomer). */
const THE_CUSTOMER = -7_919_000_001;

/**
 * The statements of each write of `scenarios`, recorded from one request on each account by the
 * app in this process, then replayed alone with one durable commit each over the account's
 * customers (GrowthRow.database). The request is one of the load's steady state: on the empty
 * account every customer has had many, so it follows four of the same customer's; on the large one
 * its customer is new to the run (an order is its customer's first of a day on both, as in the
 * load: anyOrder). The customer is found by
 * recording a second request for another customer: the values that moved with it are its id.
 */
async function statementsAlone(
  engine: 'sqlite' | 'postgres',
  url: string,
  data: GrowthData,
  scenarios: Scenario[],
): Promise<Map<string, { empty: number; large: number }>> {
  log(`== ${engine}: growth writes' statements alone (one durable commit each)`);
  const sides = ['empty', 'large'] as const;
  const recorded = await withApp(url, async (app) => {
    const out: { name: string; side: (typeof sides)[number]; statements: Statement[] }[] = [];
    for (const scenario of scenarios) {
      const request = scenario.request as WriteRequest;
      for (const side of sides) {
        const a = data[side];
        const send = (n: number, unique: string) =>
          postAs(app, request.path(a), a.apiKey, request.body(a, n, unique, nextSet(a)));
        const take = async (n: number, attempt: number) => {
          const repeats = a.lastCustomer - a.firstCustomer + 1 <= BODIES;
          for (let warmup = 1; warmup <= 4; warmup++) {
            await send(repeats ? n : n + warmup * 1009, `warm-${attempt}-${n}-${warmup}`);
          }
          const statements = await record(scenario.name, () => send(n, `${MARK}-${attempt}-${n}`), 1);
          return { customer: (request.customer ?? anyCustomer)(a, n), statements };
        };
        // A cache the app reloads (another process committed) adds a read to one of the two: again.
        let marked: Statement[] | undefined;
        for (let attempt = 0; !marked; attempt++) {
          marked = markCustomer(scenario.name, await take(4242, attempt), await take(4243, attempt), attempt === 4);
        }
        out.push({ name: scenario.name, side, statements: marked });
      }
    }
    return out;
  });
  const figures = new Map<string, { empty: number; large: number }>();
  let round = 0;
  for (const { name, side, statements } of recorded) {
    const a = data[side];
    const scope: Scope = {
      first: a.firstCustomer,
      last: a.lastCustomer,
      isCustomer: (value) => value === THE_CUSTOMER,
      idFloor: 1,
    };
    await settle(engine === 'postgres');
    const rates =
      engine === 'sqlite'
        ? Array.from({ length: RUNS }, () =>
            sqliteCeiling(url.slice('sqlite:'.length), [statements], TIMING.duration, ++round, scope),
          )
        : Array.from(
            { length: RUNS },
            () => postgresCeiling(url, pgbenchScript([statements], scope), TIMING.duration, 1).tps,
          );
    const rate = median(rates);
    log(
      `    growth: ${name}, ${side}, statements alone: ${rate.toFixed(0)}/s (runs ${rates.map((r) => r.toFixed(0)).join(', ')}), ${statements.length} statements`,
    );
    const entry = figures.get(name) ?? { empty: 0, large: 0 };
    entry[side] = rate;
    figures.set(name, entry);
  }
  return figures;
}

/**
 * `one`'s statements with its customer's id, where `other`'s held theirs, replaced by
 * THE_CUSTOMER; undefined when the two ran different statements, unless `last` (then it throws).
 */
function markCustomer(
  name: string,
  one: { customer: number; statements: Statement[] },
  other: { customer: number; statements: Statement[] },
  last: boolean,
): Statement[] | undefined {
  const shape = (statements: Statement[]) => statements.map((statement) => statement.sql).join('\n');
  if (shape(one.statements) !== shape(other.statements)) {
    if (!last) return undefined;
    const k = one.statements.findIndex((statement, i) => statement.sql !== other.statements[i]?.sql);
    throw new Error(
      `${name}: two customers' requests ran different statements, the first at ${k}:\n${one.statements[k]?.sql}\n${other.statements[k]?.sql}`,
    );
  }
  const mark = (value: unknown, moved: unknown): unknown =>
    Array.isArray(value)
      ? value.map((item, i) => mark(item, (moved as unknown[])[i]))
      : value === one.customer && moved === other.customer
        ? THE_CUSTOMER
        : value;
  return one.statements.map((statement, k) => ({
    ...statement,
    params: mark(statement.params, other.statements[k]?.params) as unknown[],
    // The customer's row read back is no row the request made.
    ...(statement.returned ? { returned: statement.returned.filter((id) => id !== one.customer) } : {}),
  }));
}

/** Drops the PostgreSQL copy a run measured (the SQLite one goes with the bench's scratch folder). */
async function dropCopy(url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${new URL(url).pathname.slice(1)}`);
  } finally {
    await admin.end();
  }
}

/**
 * A new tier that moves about a third of the million customers, made with the CLI as an operator
 * would, while wrk posts points transactions on the same account: the writes' latency before and
 * during (in slices, the worst one reported), and how long the change took.
 */
async function measureTierChange(
  url: string,
  server: { url: string; pids: () => number[] },
  a: GrowthAccount,
  database: boolean,
): Promise<TierChange> {
  log('  tier change over the large account, with writes meanwhile');
  const load: Load = {
    url: `${server.url}/v1/points_transactions`,
    method: 'POST',
    headers: bearer(a),
    bodies: () =>
      Array.from({ length: BODIES }, (_, n) =>
        JSON.stringify({ points_transaction: { customer_id: anyCustomer(a, n + 17), points_change: 1 } }),
      ),
  };
  await settle(database);
  const before = await wrk(load, 3 * SLICE_SECONDS, server.pids, database, TIER_CHANGE_CONNECTIONS);
  const started = performance.now();
  const cli = spawn(
    process.execPath,
    [
      'bin/loyalty.js',
      'vip-tiers',
      'create',
      '--account',
      String(a.accountId),
      '--name',
      'Bronze',
      '--milestone',
      '1000',
    ],
    { cwd: ROOT, env: { PATH: process.env.PATH ?? '', DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let errors = '';
  cli.stderr.on('data', (chunk) => {
    errors += chunk;
  });
  let finished = false;
  const exit = new Promise<number>((resolve) =>
    cli.once('exit', (code) => {
      finished = true;
      resolve(code ?? 1);
    }),
  );
  const slices: Figures[] = [];
  while (!finished) slices.push(await wrk(load, SLICE_SECONDS, server.pids, database, TIER_CHANGE_CONNECTIONS));
  const code = await exit;
  const seconds = (performance.now() - started) / 1000;
  const lines = errors.split('\r').filter((line) => line.startsWith('placing'));
  if (code !== 0) throw new Error(`loyalty vip-tiers create exited with ${code}:\n${errors.slice(-2000)}`);
  const during = {
    p99: Math.max(...slices.map((s) => s.p99)),
    max: Math.max(...slices.map((s) => s.max)),
    rps: slices.reduce((sum, s) => sum + s.rps, 0) / Math.max(1, slices.length),
    slices: slices.length,
  };
  const progress = lines.at(-1)?.trim() ?? '';
  log(`    slices (p99/max ms): ${slices.map((s) => `${s.p99.toFixed(0)}/${s.max.toFixed(0)}`).join(' ')}`);
  log(
    `    ${progress} in ${seconds.toFixed(1)} s (${lines.length} progress lines); writes before: p99 ${before.p99.toFixed(1)} ms, ` +
      `max ${before.max.toFixed(0)} ms; during (worst of ${slices.length} slices): p99 ${during.p99.toFixed(1)} ms, max ${during.max.toFixed(0)} ms`,
  );
  return { progress, progressLines: lines.length, seconds, before, during };
}
