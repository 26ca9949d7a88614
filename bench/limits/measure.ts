// One measurement of `npm run bench`: the machine let settle, a wrk warm-up, then RUNS wrk runs
// with the CPU of the server (and of PostgreSQL) meanwhile; the row holds the medians.
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { PG_URL, ROOT } from '../processes.js';
import { cpuTicks, machineTicks, postgresTicks, sumTicks, TICK_US } from './cpu.js';
import { CONNECTIONS, DATA, DURATION, log, RUNS, WARMUP, wanted } from './settings.js';
import { WRK } from './tools.js';

export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** The slowest request, ms. */
  max: number;
  failures: number;
  /** Server CPU per request, µs (every process of the service). */
  serverUs: number;
  /** PostgreSQL's CPU per request, µs (every postgres process), when measured. */
  databaseUs?: number;
  /** The load generator's CPU, in cores. */
  loaderCores: number;
}

export interface Row extends Figures {
  name: string;
  runs: number[];
}

/** What wrk sends. */
export interface Load {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A body per request; a new list for each run. */
  bodies?: (run: number) => string[];
}

let runNumber = 0;

/**
 * One wrk run of `seconds` against `load` (CONNECTIONS unless `connections` says), with the CPU of
 * `pids` (and PostgreSQL's) meanwhile.
 */
export async function wrk(
  load: Load,
  seconds: number,
  pids: () => number[],
  database: boolean,
  connections = CONNECTIONS,
): Promise<Figures> {
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
    ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', join(ROOT, 'bench', 'wrk.lua'), load.url],
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
    max: (result.max_us ?? 0) / 1000,
    failures: (result.errors ?? 0) + (result.non2xx ?? 0),
    serverUs: ((sumTicks(pids()) - server) * TICK_US) / requests,
    ...(database ? { databaseUs: ((postgresTicks() - db) * TICK_US) / requests } : {}),
    loaderCores: (loaderTicks * TICK_US) / 1e6 / duration,
  };
}

/** The median of a run's figures (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** The rows that were measured, without those BENCH_ONLY left out. */
export const present = <T>(rows: Array<T | undefined>) => rows.filter((row): row is T => row !== undefined);

const SETTLE_MAX_MS = 30_000;

/**
 * Waits for the machine to be quiet before a measurement: what the last one wrote flushed to
 * disk (sync, and a CHECKPOINT on PostgreSQL), then until the cores are at least 90 % idle over
 * half a second (at most 30 s). Without it, the kernel's writeback of one scenario's files and
 * PostgreSQL's checkpoint ran into the next one: reads measured right after the SQLite writes
 * cost the server 54 µs per request instead of 36.
 */
export async function settle(database: boolean): Promise<void> {
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

/**
 * `load` measured against the processes `pids` (PostgreSQL's CPU too with `database`), printed as
 * it is done; undefined when BENCH_ONLY leaves `name` out.
 */
export async function measure(
  name: string,
  load: Load,
  pids: () => number[],
  database = false,
  timing: { warmup: number; duration: number } = { warmup: WARMUP, duration: DURATION },
): Promise<Row | undefined> {
  if (!wanted(name)) return undefined;
  await settle(database);
  await wrk(load, timing.warmup, pids, database);
  const runs: Figures[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await wrk(load, timing.duration, pids, database));
  const pick = (key: keyof Figures) => median(runs.map((r) => (r[key] as number | undefined) ?? 0));
  const row: Row = {
    name,
    runs: runs.map((r) => r.rps),
    rps: pick('rps'),
    p50: pick('p50'),
    p99: pick('p99'),
    max: Math.max(...runs.map((r) => r.max)),
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
