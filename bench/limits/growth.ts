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
import { type Figures, type Load, measure, type Row, settle, wrk } from './measure.js';
import { DATA, log, wanted } from './settings.js';

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

interface Scenario {
  name: string;
  kind: 'read' | 'write';
  load: (base: string, a: GrowthAccount) => Load;
}

const bearer = (a: GrowthAccount) => ({ authorization: `Bearer ${a.apiKey}` });
/** create_or_update takes only an app's access token: one per account, issued for this run (a cached one would expire). */
const tokens = new Map<number, string>();
const iso = (ms: number) => new Date(ms).toISOString();
const BODIES = 60_000;
/** A customer of the account for any integer, spread over all of them. */
const anyCustomer = (a: GrowthAccount, n: number) =>
  a.firstCustomer + ((n * 7919) % (a.lastCustomer - a.firstCustomer + 1));

/** The routes, reads first: a write changes updated_at, which the reads' filters select by. */
function scenarios(data: GrowthData): Scenario[] {
  const get =
    (path: (a: GrowthAccount) => string) =>
    (base: string, a: GrowthAccount): Load => ({ url: `${base}${path(a)}`, headers: bearer(a) });
  const post =
    (path: (a: GrowthAccount) => string, body: (a: GrowthAccount, n: number, unique: string) => unknown) =>
    (base: string, a: GrowthAccount): Load => ({
      url: `${base}${path(a)}`,
      method: 'POST',
      headers: bearer(a),
      bodies: (run) => Array.from({ length: BODIES }, (_, n) => JSON.stringify(body(a, n, `${run}-${n}`))),
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
  const order = (customer: (a: GrowthAccount, n: number) => number) =>
    post(
      () => '/v1/activities',
      (a, n, unique) => ({
        activity: {
          token: a.activityToken,
          customer_id: customer(a, n),
          distinct_id: `growth-order-${unique}`,
          properties: { amount: `${(n % 500) + 1}.00` },
        },
      }),
    );
  const writes: Scenario[] = [
    { name: 'POST /v1/activities (any customer)', kind: 'write', load: order(anyCustomer) },
    { name: 'POST /v1/activities (the loyal customer)', kind: 'write', load: order((a) => a.loyalCustomer) },
    {
      name: 'POST purchase (any customer)',
      kind: 'write',
      load: post(
        (a) => `/v1/points_products/${a.productId}/purchase`,
        (a, n) => ({ customer_id: anyCustomer(a, n) }),
      ),
    },
    {
      name: 'POST /v1/points_transactions (any customer)',
      kind: 'write',
      load: post(
        () => '/v1/points_transactions',
        (a, n) => ({ points_transaction: { customer_id: anyCustomer(a, n), points_change: 10 } }),
      ),
    },
    {
      name: 'POST create_or_update (half new)',
      kind: 'write',
      load: withToken(
        post(
          () => '/v1/customer_identities/create_or_update',
          (a, n, unique) => ({
            customer_identity:
              n % 2 === 0
                ? { distinct_id: `growth-new-${unique}`, email: `growth-new-${unique}@bench.example` }
                : {
                    distinct_id: `a${a.accountId}-${((n * 7919) % (a.lastCustomer - a.firstCustomer + 1)) + 1}`,
                    email: `growth-updated-${n}@bench.example`,
                  },
          }),
        ),
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
    if (wanted('growth: tier change')) tierChange = await measureTierChange(url, server, data.large, database);
  } finally {
    await server.stop();
    if (database) await dropCopy(url);
  }
  return { rows, tierChange };
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
