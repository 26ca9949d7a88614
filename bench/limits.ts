// `npm run bench`: the service against the real limits of this machine, measured in one run
// (issue 17). The load generator is wrk (C, one thread; installed from Debian's packages when
// missing), and its CPU is reported. Ceilings, beside the service's own figures:
// - reads: bare node:http sending the page's bytes; Fastify sending the page pre-serialised with
//   the service's headers; Fastify serialising the page object with the route's schema;
// - writes: the route's exact statements, captured from a real request, replayed by
//   better-sqlite3 in a loop with one durable commit each (SQLite), or by pgbench as a custom
//   script at the same concurrency (PostgreSQL); on PostgreSQL also the Node floor (bench/floor.ts:
//   Fastify and pg running the same statements, nothing else).
// Server CPU per request (µs) for every scenario, and on PostgreSQL the database's too.
// Settings: BENCH_DURATION (s, default 8), BENCH_RUNS (3), BENCH_ENGINES ("sqlite,postgres"),
// BENCH_DATABASE_URL. Writes docs/benchmarks.md. BENCH_ONLY (comma-separated parts of scenario
// names, e.g. "purchases,WORKERS=2") runs only the scenarios it names, with their ceilings, and
// prints their figures without writing the report: for working on one of them.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDb } from '../src/storage/db.js';
import { PG_URL, ROOT, startProcess, startService, stopChild } from './processes.js';
import { CODE, idsOf, MARK, remember, type Statement, vary } from './replay.js';
import { median } from './results.js';
import { SEEDED_DISTINCT_ID } from './seed.js';
import { CUSTOMER_ID_BASE, CUSTOMERS, prepare, type Setup, writeScenarios } from './write-scenarios.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WARMUP = 2;
const CONNECTIONS = 50;
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>;
const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean);
/** Whether a scenario (or ceiling) of this name runs: every one unless BENCH_ONLY names some. */
const wanted = (name: string) => !ONLY || ONLY.some((part) => name.includes(part));
const DATA = join(ROOT, 'bench', '.limits');
const WRK = '/usr/bin/wrk';
const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
const log = (line: string) => process.stdout.write(`${line}\n`);

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
  /** Server CPU per request, µs (every process of the service). */
  serverUs: number;
  /** PostgreSQL's CPU per request, µs (every postgres process), when measured. */
  databaseUs?: number;
  /** The load generator's CPU, in cores. */
  loaderCores: number;
}

interface Row extends Figures {
  name: string;
  runs: number[];
}

/**
 * User + system CPU ticks of a process so far (0 once it has gone); with `reaped`, its children's
 * that have ended and been waited for too.
 */
function cpuTicks(pid: number, reaped = false): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const own = Number(fields[11]) + Number(fields[12]);
    return reaped ? own + Number(fields[13]) + Number(fields[14]) : own;
  } catch {
    return 0;
  }
}

const sumTicks = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuTicks(pid), 0);

/**
 * PostgreSQL's CPU ticks so far: every server process's, and those of the backends that have
 * ended (the postmaster waits for them), so that pgbench's connections, which come and go
 * within a run, are counted.
 */
const postgresTicks = () => postgresPids().reduce((sum, pid) => sum + cpuTicks(pid, true), 0);

/** Every PostgreSQL server process on this machine. */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

function ensureWrk(): void {
  if (existsSync(WRK)) return;
  log('== installing wrk from Debian’s packages');
  try {
    execFileSync('apt-get', ['install', '-y', '-qq', 'wrk'], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch {
    throw new Error('wrk is missing and could not be installed: run `apt-get install wrk` as root, then again');
  }
}

interface Load {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A body per request; a new list for each run. */
  bodies?: (run: number) => string[];
}

let runNumber = 0;

/** One wrk run of `seconds` against `load`, with the CPU of `pids` (and PostgreSQL's) meanwhile. */
async function wrk(load: Load, seconds: number, pids: () => number[], database: boolean): Promise<Figures> {
  const run = ++runNumber;
  const bodiesFile = join(DATA, 'bodies.txt');
  if (load.bodies) writeFileSync(bodiesFile, `${load.bodies(run).join('\n')}\n`);
  const headers = Object.entries({ ...load.headers, ...(load.bodies ? { 'content-type': 'application/json' } : {}) })
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
  const server = sumTicks(pids());
  const db = database ? postgresTicks() : 0;
  const child = spawn(
    WRK,
    ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '-s', join(ROOT, 'bench', 'wrk.lua'), load.url],
    {
      env: {
        ...process.env,
        WRK_METHOD: load.method ?? 'GET',
        WRK_HEADERS: headers,
        WRK_BODIES: load.bodies ? bodiesFile : '',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  let loaderTicks = 0;
  const poll = setInterval(() => {
    loaderTicks = Math.max(loaderTicks, cpuTicks(child.pid ?? 0));
  }, 100);
  await new Promise((resolve) => child.once('exit', resolve));
  clearInterval(poll);
  const line = /RESULT (\{.*\})/.exec(output)?.[1];
  if (!line) throw new Error(`wrk printed no result:\n${output}`);
  const result = JSON.parse(line) as Record<string, number>;
  const requests = Math.max(1, result.requests ?? 0);
  const duration = (result.duration_us ?? 1) / 1e6;
  return {
    rps: requests / duration,
    p50: (result.p50_us ?? 0) / 1000,
    p99: (result.p99_us ?? 0) / 1000,
    failures: (result.errors ?? 0) + (result.non2xx ?? 0),
    serverUs: ((sumTicks(pids()) - server) * TICK_US) / requests,
    ...(database ? { databaseUs: ((postgresTicks() - db) * TICK_US) / requests } : {}),
    loaderCores: (loaderTicks * TICK_US) / 1e6 / duration,
  };
}

const present = <T>(rows: Array<T | undefined>) => rows.filter((row): row is T => row !== undefined);

/** The machine's busy CPU ticks and all its ticks so far (/proc/stat). */
function machineTicks(): { busy: number; all: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const all = fields.reduce((sum, n) => sum + n, 0);
  // idle and iowait
  return { busy: all - (fields[3] ?? 0) - (fields[4] ?? 0), all };
}

const SETTLE_MAX_MS = 30_000;

/**
 * Waits for the machine to be quiet before a measurement: what the last one wrote flushed to
 * disk (sync, and a CHECKPOINT on PostgreSQL), then until the cores are at least 90 % idle over
 * half a second (at most 30 s). Without it, the kernel's writeback of one scenario's files and
 * PostgreSQL's checkpoint ran into the next one: reads measured right after the SQLite writes
 * cost the server 54 µs per request instead of 36.
 */
async function settle(database: boolean): Promise<void> {
  execFileSync('sync');
  if (database) {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query('checkpoint').finally(() => client.end());
  }
  const deadline = Date.now() + SETTLE_MAX_MS;
  for (;;) {
    const before = machineTicks();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = machineTicks();
    const busy = (after.busy - before.busy) / Math.max(1, after.all - before.all);
    if (busy <= 0.1 || Date.now() > deadline) return;
  }
}

async function measure(name: string, load: Load, pids: () => number[], database = false): Promise<Row | undefined> {
  if (!wanted(name)) return undefined;
  await settle(database);
  await wrk(load, WARMUP, pids, database);
  const runs: Figures[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await wrk(load, DURATION, pids, database));
  const pick = (key: keyof Figures) => median(runs.map((r) => (r[key] as number | undefined) ?? 0));
  const row: Row = {
    name,
    runs: runs.map((r) => r.rps),
    rps: pick('rps'),
    p50: pick('p50'),
    p99: pick('p99'),
    failures: runs.reduce((sum, r) => sum + r.failures, 0),
    serverUs: pick('serverUs'),
    ...(database ? { databaseUs: pick('databaseUs') } : {}),
    loaderCores: pick('loaderCores'),
  };
  log(
    `    ${name}: ${row.rps.toFixed(0)} req/s (runs ${row.runs.map((r) => r.toFixed(0)).join(', ')}), p99 ${row.p99.toFixed(1)} ms, ` +
      `server ${row.serverUs.toFixed(0)} µs/req${database ? `, database ${row.databaseUs?.toFixed(0)} µs/req` : ''}, wrk ${row.loaderCores.toFixed(2)} cores` +
      `${row.failures ? `, ${row.failures} failures` : ''}`,
  );
  return row;
}

// ---------------------------------------------------------------------------------------------
// the write ceilings: a route's statements, captured and replayed

let recording: Statement[] | null = null;

/** Records every statement better-sqlite3 runs while `recording` is set. */
function recordSqlite(): void {
  const proto = SqliteDatabase.prototype as unknown as {
    prepare: (this: unknown, sql: string) => Record<string, unknown>;
  };
  const prepareStatement = proto.prepare;
  proto.prepare = function (this: unknown, text: string) {
    const statement = prepareStatement.call(this, text);
    for (const method of ['run', 'all', 'get', 'iterate']) {
      const original = statement[method] as (...args: unknown[]) => unknown;
      statement[method] = function (this: unknown, ...args: unknown[]) {
        const result = original.apply(this, args);
        if (recording) {
          const returned = method === 'all' || method === 'get' ? idsOf(result) : [];
          recording.push({ sql: text, method, params: args, ...(returned.length ? { returned } : {}) });
        }
        return result;
      };
    }
    return statement;
  };
}

/** Records every query the pg client sends while `recording` is set. */
function recordPostgres(): void {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const result = query.apply(this, args);
    // Kysely's text and values, or the named statement the service makes of them.
    const named = typeof args[0] === 'object' ? (args[0] as { text?: string; values?: unknown[] } | null) : null;
    const text = typeof args[0] === 'string' ? args[0] : named?.text;
    if (recording && text !== undefined) {
      const params = named ? named.values : (args[1] as unknown[] | undefined);
      const statement: Statement = { sql: text, method: 'query', params: params ?? [] };
      recording.push(statement);
      void (result as Promise<{ rows: unknown[] }>).then(
        ({ rows }) => {
          const returned = idsOf(rows);
          if (returned.length) statement.returned = returned;
        },
        () => undefined,
      );
    }
    return result;
  };
}

/**
 * The statements one request of each write route runs, taken from the app itself on `url`
 * (in this process): warm-up requests first (caches filled and the customer's bonuses used up, as
 * in a steady run), then the one recorded. Unique values of the recorded request hold MARK, for the replay to vary.
 */
async function captureWrites(url: string, setup: Setup): Promise<Map<string, Statement[][]>> {
  const db = openDb(url, { poolMax: 2 });
  const app = await buildApp({
    config: loadConfig({ RATE_LIMIT_PER_SECOND: '0', AUTH_FAILURES_PER_MINUTE: '0', LOG_LEVEL: 'silent' }),
    db,
    logger: false,
  });
  await app.ready();
  const captured = new Map<string, Statement[][]>();
  try {
    for (const scenario of writeScenarios(setup)) {
      const send = (n: number, unique: string) =>
        app.inject({
          method: 'POST',
          url: scenario.path,
          headers: { authorization: `Bearer ${scenario.token}`, 'content-type': 'application/json' },
          payload: JSON.stringify(scenario.body(n, unique)),
        });
      const sequences: Statement[][] = [];
      // create_or_update alternates a new identity and an update: both are replayed in turn.
      for (const n of scenario.name.startsWith('create_or_update') ? [0, 1] : [0]) {
        // The warm-ups are for the same customer, so that the recorded request is one of the load's
        // steady state, not the first of its kind: an order after the day's bonuses (the seed's
        // "Order bonus" earns at most 3 times a day), as every customer has after a few orders.
        for (let warmup = 0; warmup < 4; warmup++) await send(n, `warm-${n}-${warmup}`);
        recording = [];
        const answer = await send(n, `${MARK}`);
        sequences.push(recording);
        recording = null;
        if (answer.statusCode >= 300) throw new Error(`${scenario.name}: ${answer.statusCode} ${answer.body}`);
      }
      captured.set(scenario.name, sequences);
    }
  } finally {
    recording = null;
    await app.close();
    await db.close();
  }
  return captured;
}

/**
 * better-sqlite3 running the sequences in a loop, one durable commit each: commits per second.
 * Each sequence (the request's reads before its transaction too) runs in one BEGIN IMMEDIATE …
 * COMMIT: the service's savepoints and group commits are its own, not the disk's.
 */
function sqliteCeiling(file: string, sequences: Statement[][], seconds: number, round: number): number {
  const db = new SqliteDatabase(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  const prepared = sequences.map((sequence) =>
    sequence.map((statement) => ({ ...statement, prepared: db.prepare(statement.sql) })),
  );
  const begin = db.prepare('begin immediate');
  const commit = db.prepare('commit');
  const started = performance.now();
  let done = 0;
  while (performance.now() - started < seconds * 1000) {
    const ids = new Map<number, number>();
    begin.run();
    for (const statement of prepared[done % prepared.length] ?? []) {
      const run = (statement.prepared as unknown as Record<string, (...args: unknown[]) => unknown>)[statement.method];
      const params = vary(statement.params, round * 10_000_000 + done, ids) as unknown[];
      let result = run?.apply(statement.prepared, params);
      if (statement.method === 'iterate') result = [...(result as Iterable<unknown>)];
      remember(statement, result, ids);
    }
    commit.run();
    done++;
  }
  const elapsed = (performance.now() - started) / 1000;
  db.close();
  return done / elapsed;
}

/** A pgbench script of the sequences: parameters written in, MARK varied by a random number. */
function pgbenchScript(sequences: Statement[][]): string {
  const literal = (value: unknown): string => {
    if (value === null || value === undefined) return 'null';
    if (typeof value === 'number' && value > CUSTOMER_ID_BASE && value <= CUSTOMER_ID_BASE + CUSTOMERS) return ':c';
    if (typeof value === 'number' || typeof value === 'bigint') return String(value);
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    const text = String(value);
    if (CODE.test(text)) return `upper(substr(md5(random()::text), 1, 16))`;
    // The seeded identity of the script's customer :c (see identityOf).
    const identity = SEEDED_DISTINCT_ID.exec(text);
    if (identity) return `'a${identity[1]}-' || (:c - ${CUSTOMER_ID_BASE})`;
    return `'${text.replaceAll("'", "''").replaceAll(MARK, "' || :n || '")}'`;
  };
  const lines = [
    '\\set n random(1, 1000000000000000)',
    `\\set c random(${CUSTOMER_ID_BASE + 1}, ${CUSTOMER_ID_BASE + CUSTOMERS})`,
  ];
  // An id a statement returned is kept with \gset and used where later statements had it.
  const render = (sequence: Statement[], seq: number) => {
    const variables = new Map<number, string>();
    return sequence.map((statement, index) => {
      let text = statement.sql.replace(/\s+/g, ' ');
      for (let i = statement.params.length; i >= 1; i--) {
        const value = statement.params[i - 1];
        const variable = typeof value === 'number' ? variables.get(value) : undefined;
        text = text.replaceAll(`$${i}`, variable ?? literal(value));
      }
      const id = statement.returned?.length === 1 ? statement.returned[0] : undefined;
      const used = id !== undefined && sequence.slice(index + 1).some((later) => later.params.includes(id));
      if (!used) return `${text};`;
      const prefix = `g${seq}_${index}_`;
      variables.set(id, `:${prefix}id`);
      return `${text} \\gset ${prefix}`;
    });
  };
  // pgbench has no branches: with two sequences both run, each counted as one request.
  sequences.forEach((sequence, seq) => {
    lines.push(...render(sequence, seq));
  });
  return `${lines.join('\n')}\n`;
}

/**
 * pgbench at the same concurrency: transactions (script runs) per second, mean latency, and
 * PostgreSQL's CPU per transaction meanwhile (µs).
 */
function postgresCeiling(
  url: string,
  script: string,
  seconds: number,
  perScript: number,
): { tps: number; latency: number; databaseUs: number } {
  const file = join(DATA, 'pgbench.sql');
  writeFileSync(file, script);
  // libpq reads a URI's query percent-decoded only: the space of `-c search_path=…` must be %20.
  const conninfo = url.replaceAll('+', '%20');
  const before = postgresTicks();
  const output = execFileSync(
    'pgbench',
    // Prepared, as the service's own statements are (storage/postgres-statements.ts).
    ['-n', '-M', 'prepared', '-c', String(CONNECTIONS), '-j', '1', '-T', String(seconds), '-f', file, conninfo],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const tps = Number(/tps = ([\d.]+)/.exec(output)?.[1] ?? 0);
  const latency = Number(/latency average = ([\d.]+) ms/.exec(output)?.[1] ?? 0);
  const transactions = Math.max(1, Number(/number of transactions actually processed: (\d+)/.exec(output)?.[1] ?? 0));
  const databaseUs = ((postgresTicks() - before) * TICK_US) / (transactions * perScript);
  return { tps: tps * perScript, latency: latency / perScript, databaseUs };
}

// ---------------------------------------------------------------------------------------------
// the run

interface EngineReport {
  engine: string;
  reads: Row[];
  readCeilings: Row[];
  writes: Row[];
  writeCeilings: Array<{ name: string; rps: number; latency?: number; databaseUs?: number }>;
  /** PostgreSQL: bench/floor.ts running each route's statements (see there). */
  writeFloors: Row[];
}

async function benchEngine(engine: 'sqlite' | 'postgres'): Promise<EngineReport> {
  log(`\n== ${engine}: seeding`);
  const { url, setup } = await prepare(engine, DATA, log);
  const captured = await captureWrites(url, setup);
  const database = engine === 'postgres';
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const report: EngineReport = { engine, reads: [], readCeilings: [], writes: [], writeCeilings: [], writeFloors: [] };

  const server = await startService(url, 1);
  try {
    const first = await fetch(`${server.url}/v1/earning_rules?limit=50`, { headers: bearer(setup.account.apiKey) });
    const page = await first.text();
    const headers: Record<string, string> = {};
    first.headers.forEach((value, name) => {
      if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name))
        headers[name] = value;
    });
    writeFileSync(join(DATA, 'page.json'), page);
    writeFileSync(join(DATA, 'headers.json'), JSON.stringify(headers));
    log(
      `  the page: ${Buffer.byteLength(page)} bytes, ${(JSON.parse(page) as { earning_rules: unknown[] }).earning_rules.length} rules`,
    );

    log(`== ${engine}: reads`);
    report.reads.push(
      ...present([
        await measure(
          'GET /v1/earning_rules?limit=50',
          { url: `${server.url}/v1/earning_rules?limit=50`, headers: bearer(setup.account.apiKey) },
          server.pids,
          database,
        ),
        await measure(
          'GET /v1/referral_settings',
          { url: `${server.url}/v1/referral_settings`, headers: bearer(setup.account.apiKey) },
          server.pids,
          database,
        ),
      ]),
    );
    log(`== ${engine}: writes`);
    for (const scenario of writeScenarios(setup)) {
      report.writes.push(
        ...present([
          await measure(
            scenario.name,
            {
              url: `${server.url}${scenario.path}`,
              method: 'POST',
              headers: bearer(scenario.token),
              bodies: (run) => scenario.many((n) => scenario.body(n, `${run}-${n}`))(),
            },
            server.pids,
            database,
          ),
        ]),
      );
    }
  } finally {
    await server.stop();
  }

  if (engine === 'sqlite' && writeScenarios(setup).some((scenario) => wanted(`${scenario.name}, WORKERS=2`))) {
    // Two processes writing one SQLite file: the tail the issue names.
    log(`== ${engine}: writes with WORKERS=2`);
    const two = await startService(url, 2);
    try {
      for (const scenario of writeScenarios(setup)) {
        const row = await measure(
          `${scenario.name}, WORKERS=2`,
          {
            url: `${two.url}${scenario.path}`,
            method: 'POST',
            headers: bearer(scenario.token),
            bodies: (run) => scenario.many((n) => scenario.body(n, `w2-${run}-${n}`))(),
          },
          two.pids,
          false,
        );
        report.writes.push(...present([row]));
      }
    } finally {
      await two.stop();
    }
  }

  log(`== ${engine}: write ceilings (the routes' statements, one durable commit each)`);
  let round = 0;
  for (const [name, sequences] of captured) {
    if (!wanted(name)) continue;
    if (engine === 'sqlite') {
      const rates: number[] = [];
      await settle(false);
      for (let i = 0; i < RUNS; i++) rates.push(sqliteCeiling(join(DATA, 'limits.db'), sequences, DURATION, ++round));
      const rps = median(rates);
      log(
        `    ${name}: ${rps.toFixed(0)} commits/s (runs ${rates.map((r) => r.toFixed(0)).join(', ')}), ${sequences.map((s) => s.length).join('+')} statements`,
      );
      report.writeCeilings.push({ name, rps });
    } else {
      const script = pgbenchScript(sequences);
      await settle(true);
      const runs = Array.from({ length: RUNS }, () => postgresCeiling(url, script, DURATION, sequences.length));
      const rps = median(runs.map((r) => r.tps));
      const latency = median(runs.map((r) => r.latency));
      const databaseUs = median(runs.map((r) => r.databaseUs));
      log(
        `    ${name}: ${rps.toFixed(0)} transactions/s (runs ${runs.map((r) => r.tps.toFixed(0)).join(', ')}), mean ${latency.toFixed(1)} ms, database ${databaseUs.toFixed(0)} µs/transaction`,
      );
      report.writeCeilings.push({ name, rps, latency, databaseUs });
    }
  }
  if (engine === 'postgres') report.writeFloors.push(...(await nodeFloors(url, setup, captured)));
  return report;
}

/** What the name of a write scenario's floor row adds to the scenario's name. */
const FLOOR = ', Node floor';

/** bench/floor.ts on each write route's recorded statements, loaded as the service was. */
async function nodeFloors(url: string, setup: Setup, captured: Map<string, Statement[][]>): Promise<Row[]> {
  log("== postgres: the Node floor (Fastify and pg running the routes' statements, nothing else)");
  const rows: Row[] = [];
  for (const scenario of writeScenarios(setup)) {
    const sequences = captured.get(scenario.name);
    const name = `${scenario.name}${FLOOR}`;
    if (!sequences || !wanted(name)) continue;
    const file = join(DATA, 'statements.json');
    writeFileSync(file, JSON.stringify(sequences));
    const floor = await startProcess(
      ['dist-bench/bench/floor.js'],
      { DATABASE_URL: url, STATEMENTS_FILE: file },
      /listening (\d+)/,
    );
    try {
      const load = {
        url: `http://127.0.0.1:${floor.port}${scenario.path}`,
        method: 'POST' as const,
        headers: { authorization: `Bearer ${scenario.token}` },
        bodies: (run: number) => scenario.many((n) => scenario.body(n, `floor-${run}-${n}`))(),
      };
      rows.push(...present([await measure(name, load, () => [floor.child.pid ?? 0], true)]));
    } finally {
      await stopChild(floor.child);
    }
  }
  return rows;
}

async function readCeilings(pageFile: string, headersFile: string): Promise<Row[]> {
  log('\n== read ceilings: the same page from memory');
  const rows: Row[] = [];
  for (const [mode, name] of [
    ['node', 'bare node:http sending the page’s bytes'],
    ['fastify-string', 'Fastify sending the page pre-serialised, with the service’s headers'],
    ['fastify-object', 'Fastify serialising the page object (the route’s schema)'],
    ['fastify-string-batched', 'Fastify sending the page pre-serialised, answers of a turn written together'],
  ] as const) {
    const peer = await startProcess(
      ['dist-bench/bench/ceilings.js'],
      { MODE: mode, PAGE_FILE: pageFile, HEADERS_FILE: headersFile },
      /listening (\d+)/,
    );
    try {
      rows.push(
        ...present([
          await measure(name, { url: `http://127.0.0.1:${peer.port}/v1/earning_rules?limit=50` }, () => [
            peer.child.pid ?? 0,
          ]),
        ]),
      );
    } finally {
      await stopChild(peer.child);
    }
  }
  return rows;
}

/** Issue 17's targets: throughput against the ceiling of the same run, and the write tail at 50 connections. */
const RATIO_TARGET = 0.7;
const P99_TARGET_MS = 50;
const met = (yes: boolean) => (yes ? 'met:' : '**missed**:');

/**
 * The Node floor beside the service and pgbench: the floor's ratio to pgbench bounds what any
 * Node service on pg reaches here; the service's ratio to the floor is what its own work costs.
 */
function floorTable(engine: EngineReport, fixed: (value: number, digits?: number) => string): string[] {
  const ratio = (a: number, b: number) => (a > 0 && b > 0 ? fixed(a / b, 2) : '—');
  return [
    `### The Node floor: Fastify and pg running the same statements`,
    '',
    'bench/floor.ts answers each write route by running the statements the service ran for it (recorded as for ' +
      'pgbench, its BEGIN and COMMIT too) on pg, with the service’s named statements and pool size, and nothing else: ' +
      'no authentication, validation, business logic, metrics or logging. Its ratio to pgbench bounds what a Node ' +
      'service on pg can reach on this machine; the service’s ratio to it is what the service’s own work costs.',
    '',
    '| scenario | floor req/s | p99 ms | floor µs/req | database µs/req | floor / pgbench | service / floor |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...engine.writeFloors.map((floor) => {
      const scenario = floor.name.slice(0, -FLOOR.length);
      const ceiling = engine.writeCeilings.find((c) => c.name === scenario)?.rps ?? 0;
      const service = engine.writes.find((row) => row.name === scenario)?.rps ?? 0;
      return `| POST ${scenario} | ${fixed(floor.rps)} | ${fixed(floor.p99, 1)} | ${fixed(floor.serverUs)} | ${fixed(floor.databaseUs ?? 0)} | ${ratio(floor.rps, ceiling)} | ${ratio(service, floor.rps)} |`;
    }),
  ];
}

function writeLimitsReport(started: Date, engines: EngineReport[], ceilings: Row[]): string {
  const fixed = (value: number, digits = 0) =>
    value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const fastifyString = ceilings[1]?.rps ?? 1;
  const batched = ceilings[3]?.rps ?? 1;
  const out: string[] = [
    '# The service against the machine’s limits',
    '',
    `Generated by \`npm run bench\` (bench/limits.ts) on ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC: ` +
      `${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}, Node ${process.version}. wrk 4.1 (one thread, ${CONNECTIONS} connections), ` +
      `${RUNS} runs of ${DURATION} s after a ${WARMUP} s warm-up; medians. The load generator shares the two cores with ` +
      'the server: its CPU is in the `wrk` column (1.00 = a whole core). WORKERS=1 unless a row says otherwise, rate limit off, ' +
      'LOG_LEVEL=warn. Before each scenario and ceiling the machine is let settle (sync, a PostgreSQL CHECKPOINT, then ' +
      'cores at least 90 % idle). The ceilings are measured in the same run; the read ceiling varies from run to run on ' +
      'these shared cores (its runs are shown), so compare server µs per request too.',
    '',
    '## Read ceilings (the page of 50 rules, from memory)',
    '',
    '| what | req/s (median) | its runs | p99 ms | server µs/req | wrk cores |',
    '|---|---:|---|---:|---:|---:|',
    ...ceilings.map(
      (r) =>
        `| ${r.name} | ${fixed(r.rps)} | ${r.runs.map((x) => fixed(x)).join(', ')} | ${fixed(r.p99, 1)} | ${fixed(r.serverUs)} | ${fixed(r.loaderCores, 2)} |`,
    ),
  ];
  for (const engine of engines) {
    out.push(
      '',
      `## ${engine.engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      '',
      '| scenario | req/s | p50 ms | p99 ms | server µs/req | database µs/req | wrk cores | ceiling | ratio | target |',
      '|---|---:|---:|---:|---:|---:|---:|---|---:|---|',
    );
    for (const row of engine.reads) {
      const ratio = row.rps / fastifyString;
      out.push(
        `| ${row.name} | ${fixed(row.rps)} | ${fixed(row.p50, 1)} | ${fixed(row.p99, 1)} | ${fixed(row.serverUs)} | ${row.databaseUs === undefined ? '—' : fixed(row.databaseUs)} | ${fixed(row.loaderCores, 2)} | Fastify pre-serialised: ${fixed(fastifyString)} | ${fixed(ratio, 2)} | ${met(ratio >= RATIO_TARGET)} ratio ≥ ${RATIO_TARGET} |`,
      );
    }
    const againstBatched = engine.reads.map((row) => `${row.name} ${fixed(row.rps / batched, 2)}`).join(', ');
    const readsNote =
      `Reads against Fastify writing its answers in batches too, as the service does (${fixed(batched)} req/s): ` +
      `${againstBatched}.`;
    for (const row of engine.writes) {
      const ceiling = engine.writeCeilings.find((c) => row.name.startsWith(c.name));
      const label =
        engine.engine === 'sqlite' ? 'better-sqlite3, one commit each' : 'pgbench, same SQL prepared, 50 clients';
      const ratio = row.rps / (ceiling?.rps || 1);
      out.push(
        `| POST ${row.name} | ${fixed(row.rps)} | ${fixed(row.p50, 1)} | ${fixed(row.p99, 1)} | ${fixed(row.serverUs)} | ${row.databaseUs === undefined ? '—' : fixed(row.databaseUs)} | ${fixed(row.loaderCores, 2)} | ${label}: ${fixed(ceiling?.rps ?? 0)} | ${fixed(ratio, 2)} | ${met(ratio >= RATIO_TARGET)} ratio ≥ ${RATIO_TARGET}, ${met(row.p99 <= P99_TARGET_MS)} p99 ≤ ${P99_TARGET_MS} ms |`,
      );
    }
    out.push('', readsNote);
    if (engine.engine === 'postgres') {
      // Little's law at 50 clients: the ceiling's own latency says whether p99 ≤ 50 ms is within reach.
      const latencies = engine.writeCeilings
        .map((c) => `${c.name} ${fixed(c.latency ?? 0, 1)} ms (database ${fixed(c.databaseUs ?? 0)} µs/transaction)`)
        .join('; ');
      out.push(
        '',
        `pgbench's own mean latency at ${CONNECTIONS} clients (the ceiling's, not the service's), with PostgreSQL's CPU per transaction: ${latencies}.`,
      );
      if (engine.writeFloors.length > 0) out.push('', ...floorTable(engine, fixed));
    }
    const failures = [...engine.reads, ...engine.writes].filter((row) => row.failures > 0);
    if (failures.length > 0)
      out.push('', `Failures (errors or non-2xx): ${failures.map((r) => `${r.name} ${r.failures}`).join('; ')}.`);
  }
  out.push(
    '',
    '## How the ceilings are made',
    '',
    '- Reads: bench/ceilings.ts serves the page the service answered, with the headers it answered with (a new',
    '  `x-request-id` each time), from memory: no storage, no authentication. The target’s ceiling writes each answer',
    '  as soon as it is ready; the service writes the answers of one turn of the event loop together',
    '  (src/http/send-batching.ts), which saves waking the reader per answer, so the ceiling is also measured doing the',
    '  same, and the reads’ ratios to it are given under each engine’s table.',
    '- Writes: bench/limits.ts records the statements one request of each route runs in the app itself (after',
    '  warm-up requests for the same customer, so that it is a request of the steady state: an order after the',
    '  day’s bonuses), then replays them: on SQLite with better-sqlite3 in one loop, each request’s statements in one',
    '  `BEGIN IMMEDIATE … COMMIT` with `synchronous=FULL` (one durable commit each, one at a time: the disk’s commit',
    '  rate); on PostgreSQL with pgbench, the same SQL with its values written in, prepared (`-M prepared`, as the',
    '  service prepares its statements), 50 clients. Unique values (new',
    '  identities, orders, reward codes) are varied per replay, and so is the customer (its id, and its seeded',
    '  identity for an update), spread over the 1,000 customers as the load spreads them. create_or_update replays',
    '  its new and its update request in turn.',
    '- The Node floor (PostgreSQL): bench/floor.ts runs the same recorded statements from a bare Fastify route on',
    '  pg, loaded by wrk like the service. It shows how much of the distance to pgbench any Node service on pg',
    '  keeps, and how much is the service’s own work.',
    '',
  );
  const file = join(ROOT, 'docs', 'benchmarks.md');
  writeFileSync(file, out.join('\n'));
  return file;
}

async function main(): Promise<void> {
  const started = new Date();
  ensureWrk();
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  recordSqlite();
  recordPostgres();
  const engines: EngineReport[] = [];
  for (const engine of ENGINES) {
    if (engine === 'postgres') {
      const client = new pg.Client({ connectionString: PG_URL });
      const reachable = await client.connect().then(
        () => true,
        () => false,
      );
      await client.end().catch(() => undefined);
      if (!reachable) {
        log(`PostgreSQL skipped: nothing answers at ${PG_URL}`);
        continue;
      }
    }
    engines.push(await benchEngine(engine));
  }
  const ceilings = await readCeilings(join(DATA, 'page.json'), join(DATA, 'headers.json'));
  rmSync(DATA, { recursive: true, force: true });
  if (ONLY) {
    log('\nBENCH_ONLY is set: docs/benchmarks.md is left as it was');
    return;
  }
  const file = writeLimitsReport(started, engines, ceilings);
  log(`\nwrote ${file}`);
}

await main();
