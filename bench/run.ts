// `npm run bench:scenarios`: every scenario of docs/scenarios.md in one run, with autocannon, and the
// report written from the figures. Settings: BENCH_DURATION (s, default 10), BENCH_WARMUP (s, 3),
// BENCH_RUNS (3), BENCH_DATABASE_URL (PostgreSQL; default the local test database),
// BENCH_ENGINES ("sqlite,postgres"), BENCH_QUICK=1 (2 s, 1 run: checks the harness only).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import {
  freePort,
  freshPostgresSchema,
  PG_URL,
  peakRssMiB,
  ROOT,
  startProcess,
  startService,
  stopChild,
} from './processes.js';
import { writeReport } from './report.js';
import { type DatabaseWork, type Engine, type EngineResult, type Figures, median, type Row } from './results.js';
import { type BenchData, seed } from './seed.js';

const quick = process.env.BENCH_QUICK === '1';
const DURATION = Number(process.env.BENCH_DURATION ?? (quick ? 2 : 10));
const WARMUP = Number(process.env.BENCH_WARMUP ?? (quick ? 1 : 3));
const RUNS = Number(process.env.BENCH_RUNS ?? (quick ? 1 : 3));
const CONNECTIONS = 50;
const FIXED_RATE = 2000;
// autocannon sends each connection's share of a second's budget as fast as it can at the start of
// the second; with 50 connections that is 2,000 requests queued at once, whatever the server. Ten
// connections keep the offered load at 2,000 req/s with bursts of at most ten.
const FIXED_RATE_CONNECTIONS = 10;
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Engine[];
const DATA_DIR = join(ROOT, 'bench', '.data');
const log = (line: string) => process.stdout.write(`${line}\n`);

// ---------------------------------------------------------------------------------------------
// load

async function load(options: autocannon.Options): Promise<Figures> {
  const result = await autocannon({ connections: CONNECTIONS, ...options });
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/** A warm-up, then RUNS measured runs; the row holds the medians. */
async function measure(name: string, options: () => autocannon.Options, database?: pg.Client): Promise<Row> {
  await load({ ...options(), duration: WARMUP });
  const runs: Figures[] = [];
  const before = database && (await databaseCounters(database));
  for (let i = 0; i < RUNS; i++) runs.push(await load({ ...options(), duration: DURATION }));
  const requests = runs.reduce((sum, r) => sum + r.requests, 0);
  const row: Row = {
    name,
    runs: runs.map((r) => r.rps),
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
    ...(database && before ? { database: perRequest(before, await databaseCounters(database), requests) } : {}),
  };
  log(
    `    ${name}: ${row.rps.toFixed(0)} req/s (runs ${row.runs.map((r) => r.toFixed(0)).join(', ')}), p50 ${row.p50} ms, p99 ${row.p99} ms${row.errors + row.non2xx ? `, ${row.errors} errors, ${row.non2xx} non-2xx` : ''}`,
  );
  return row;
}

/** Runs `fn` with a connection to read PostgreSQL's statistics from (none on SQLite). */
async function withStatistics<T>(
  engine: Engine,
  databaseUrl: string,
  fn: (statistics: pg.Client | undefined) => Promise<T>,
): Promise<T> {
  if (engine !== 'postgres') return fn(undefined);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

type Counters = Record<'wal' | 'fpi' | 'read' | 'hit' | 'updates' | 'hot', number>;

/** PostgreSQL's cumulative counters for the whole server and the benchmark's tables. */
async function databaseCounters(client: pg.Client): Promise<Counters> {
  const { rows } = await client.query<Record<keyof Counters, string>>(`
    select w.wal_bytes as wal, w.wal_fpi as fpi, io.read, io.hit, t.updates, t.hot
    from pg_stat_wal w,
      (select sum(coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0)) as read,
              sum(coalesce(heap_blks_hit, 0) + coalesce(idx_blks_hit, 0)) as hit
       from pg_statio_user_tables where schemaname = current_schema()) io,
      (select sum(n_tup_upd) as updates, sum(n_tup_hot_upd) as hot
       from pg_stat_user_tables where schemaname = current_schema()) t`);
  const row = rows[0]!;
  return Object.fromEntries(Object.entries(row).map(([key, value]) => [key, Number(value)])) as Counters;
}

function perRequest(before: Counters, after: Counters, requests: number): DatabaseWork {
  const delta = (key: keyof Counters) => (after[key] - before[key]) / Math.max(1, requests);
  const updates = after.updates - before.updates;
  return {
    walBytes: delta('wal'),
    fullPageImages: delta('fpi'),
    blocksRead: delta('read'),
    blocksHit: delta('hit'),
    hotShare: updates === 0 ? 0 : (after.hot - before.hot) / updates,
  };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The cursor of page `n` (1-based) of an account's rules, found by walking. */
async function cursorOfPage(url: string, key: string, n: number): Promise<string> {
  let cursor = '';
  for (let page = 1; page < n; page++) {
    const response = await fetch(`${url}/v1/earning_rules?limit=50${cursor ? `&cursor=${cursor}` : ''}`, {
      headers: bearer(key),
    });
    const body = (await response.json()) as { metadata: { next_cursor: string } };
    cursor = body.metadata.next_cursor;
    if (!cursor) throw new Error(`the account has fewer than ${n} pages`);
  }
  return cursor;
}

let sequence = 0;
/** A scenario of POSTs to `path`, each body made by `body` from the run's number and the request's. */
function posts(
  url: string,
  path: string,
  token: string,
  body: (run: number, n: number) => unknown,
): autocannon.Options {
  const run = ++sequence;
  let i = 0;
  return {
    url,
    requests: [
      {
        method: 'POST',
        path,
        headers: { ...bearer(token), 'content-type': 'application/json' },
        setupRequest: (request) => ({ ...request, body: JSON.stringify(body(run, i++)) }),
      },
    ],
  };
}

/** Half creates (new distinct_id and email), half updates of existing identities. */
function createOrUpdate(url: string, account: BenchData['base']): autocannon.Options {
  return posts(url, '/v1/customer_identities/create_or_update', account.accessToken, (run, n) => ({
    customer_identity:
      n % 2 === 0
        ? {
            distinct_id: `new-${run}-${n}`,
            email: `new-${run}-${n}@bench.example`,
            first_name: 'New',
            properties: { n },
          }
        : {
            distinct_id: account.existingDistinctIds(n * 7919),
            email: `updated-${n}@bench.example`,
            properties: { n },
          },
  }));
}

/** Orders of existing customers, each with a new distinct_id and an amount: two rules evaluated, one or two credits. */
function activities(url: string, account: BenchData['base']): autocannon.Options {
  return posts(url, '/v1/activities', account.apiKey, (run, n) => ({
    activity: {
      token: account.activityToken,
      customer_id: account.customerId(n * 7919),
      distinct_id: `order-${run}-${n}`,
      properties: { amount: `${(n % 500) + 1}.${String(n % 100).padStart(2, '0')}` },
    },
  }));
}

// ---------------------------------------------------------------------------------------------
// the run

async function prepareDatabase(engine: Engine): Promise<string> {
  if (engine === 'sqlite') {
    rmSync(DATA_DIR, { recursive: true, force: true });
    mkdirSync(DATA_DIR, { recursive: true });
    return `sqlite:${join(DATA_DIR, 'bench.db')}`;
  }
  return freshPostgresSchema('loyalty_bench');
}

async function benchEngine(engine: Engine, pageFile: string, onPage: () => Promise<void>): Promise<EngineResult> {
  log(`\n== ${engine}: seeding`);
  const databaseUrl = await prepareDatabase(engine);
  const data = await seed(databaseUrl, log, quick ? 20_000 : 1_000_000);
  const result: EngineResult = { engine, workers: {} };

  for (const workers of [1, 2]) {
    log(`== ${engine}, WORKERS=${workers}`);
    const server = await startService(databaseUrl, workers);
    try {
      if (workers === 1) {
        // The same 50 rules the ceiling and json-server serve.
        const first = await fetch(`${server.url}/v1/earning_rules?limit=50`, { headers: bearer(data.base.apiKey) });
        writeFileSync(pageFile, await first.text());
        // The ceiling and the peer are measured now, next to the scenarios they are compared with.
        await onPage();
      }
      const deep = await cursorOfPage(server.url, data.base.apiKey, 100);
      const rows = [
        await measure('earning_rules first page', () => ({
          url: `${server.url}/v1/earning_rules?limit=50`,
          headers: bearer(data.base.apiKey),
        })),
        await measure('earning_rules page 100', () => ({
          url: `${server.url}/v1/earning_rules?limit=50&cursor=${deep}`,
          headers: bearer(data.base.apiKey),
        })),
        await measure('referral_settings', () => ({
          url: `${server.url}/v1/referral_settings`,
          headers: bearer(data.base.apiKey),
        })),
        await measure('create_or_update (half new)', () => createOrUpdate(server.url, data.base)),
        await measure('activities (new orders, 2 rules)', () => activities(server.url, data.base)),
      ];
      const memory = server.pids().map(peakRssMiB);
      result.workers[workers] = { rows, memory };

      if (workers === 1) {
        log(`== ${engine}: scale (1,000,000 identities and 10,000 rules vs an empty account)`);
        // PostgreSQL's counters show what create_or_update costs the database (see DatabaseWork).
        const writes = await withStatistics(engine, databaseUrl, async (statistics) => [
          await measure('create_or_update, empty account', () => createOrUpdate(server.url, data.empty), statistics),
          await measure('create_or_update, 1M identities', () => createOrUpdate(server.url, data.large), statistics),
        ]);
        result.scale = [
          ...writes,
          await measure('earning_rules first page, empty account', () => ({
            url: `${server.url}/v1/earning_rules?limit=50`,
            headers: bearer(data.empty.apiKey),
          })),
          await measure('earning_rules first page, 10,000 rules', () => ({
            url: `${server.url}/v1/earning_rules?limit=50`,
            headers: bearer(data.large.apiKey),
          })),
        ];
        log(`== ${engine}: fixed rate ${FIXED_RATE} req/s`);
        result.fixedRate = [
          await measure('earning_rules first page', () => ({
            url: `${server.url}/v1/earning_rules?limit=50`,
            headers: bearer(data.base.apiKey),
            overallRate: FIXED_RATE,
            connections: FIXED_RATE_CONNECTIONS,
          })),
          await measure('earning_rules page 100', () => ({
            url: `${server.url}/v1/earning_rules?limit=50&cursor=${deep}`,
            headers: bearer(data.base.apiKey),
            overallRate: FIXED_RATE,
            connections: FIXED_RATE_CONNECTIONS,
          })),
          await measure('referral_settings', () => ({
            url: `${server.url}/v1/referral_settings`,
            headers: bearer(data.base.apiKey),
            overallRate: FIXED_RATE,
            connections: FIXED_RATE_CONNECTIONS,
          })),
        ];
      }
    } finally {
      await server.stop();
    }
  }
  return result;
}

async function benchPeers(
  pageFile: string,
): Promise<{ ceiling: Row; ceilingFixed: Row; jsonServer: Row; memory: Record<string, number> }> {
  log('\n== the ceiling: the same stack from memory');
  const ceiling = await startProcess(
    ['dist-bench/bench/ceiling.js'],
    { PAGE_FILE: pageFile, LOG_LEVEL: 'warn' },
    /listening (\d+)/,
  );
  let ceilingRow: Row;
  let ceilingFixed: Row;
  const memory: Record<string, number> = {};
  try {
    const url = `http://127.0.0.1:${ceiling.port}/v1/earning_rules?limit=50`;
    ceilingRow = await measure('ceiling', () => ({ url }));
    ceilingFixed = await measure(`ceiling at ${FIXED_RATE} req/s`, () => ({
      url,
      overallRate: FIXED_RATE,
      connections: FIXED_RATE_CONNECTIONS,
    }));
    memory.ceiling = peakRssMiB(ceiling.child.pid ?? 0);
  } finally {
    await stopChild(ceiling.child);
  }

  log('== json-server 0.17.4 with the same 50 rules');
  const db = join(DATA_DIR, 'json-server-db.json');
  const page = JSON.parse(readFileSync(pageFile, 'utf8')) as { earning_rules: unknown[] };
  writeFileSync(db, JSON.stringify({ earning_rules: page.earning_rules }));
  const port = await freePort();
  const peer = await startProcess(
    ['node_modules/json-server/lib/cli/bin.js', '--host', '127.0.0.1', '--port', String(port), db],
    {},
    /Home/,
  );
  let jsonServerRow: Row;
  try {
    jsonServerRow = await measure('json-server', () => ({ url: `http://127.0.0.1:${port}/earning_rules` }));
    memory['json-server'] = peakRssMiB(peer.child.pid ?? 0);
  } finally {
    await stopChild(peer.child);
  }
  return { ceiling: ceilingRow, ceilingFixed, jsonServer: jsonServerRow, memory };
}

async function postgresVersion(): Promise<string | null> {
  try {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    const { rows } = await client.query<{ server_version: string }>('show server_version');
    await client.end();
    return rows[0]?.server_version ?? null;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const started = new Date();
  mkdirSync(DATA_DIR, { recursive: true });
  const pageFile = join(ROOT, 'bench', '.page.json');
  const engines: EngineResult[] = [];
  const pgVersion = await postgresVersion();
  const skipped: string[] = [];
  let peers: Awaited<ReturnType<typeof benchPeers>> | undefined;
  for (const engine of ENGINES) {
    if (engine === 'postgres' && !pgVersion) {
      skipped.push(`PostgreSQL: nothing answers at ${PG_URL} (set BENCH_DATABASE_URL)`);
      continue;
    }
    engines.push(
      await benchEngine(engine, pageFile, async () => {
        peers ??= await benchPeers(pageFile);
      }),
    );
    if (engine === 'sqlite') rmSync(join(DATA_DIR, 'bench.db'), { force: true });
  }
  peers ??= await benchPeers(pageFile);
  const file = writeReport({
    started,
    finished: new Date(),
    settings: {
      duration: DURATION,
      warmup: WARMUP,
      runs: RUNS,
      connections: CONNECTIONS,
      fixedRate: FIXED_RATE,
      quick,
    },
    machine: {
      cpu: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}`,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      postgres: pgVersion,
    },
    engines,
    peers,
    skipped,
  });
  rmSync(DATA_DIR, { recursive: true, force: true });
  log(`\nwrote ${file}`);
}

await main();
