// `npm run bench:imports`: issue 32's large file. A generated CSV of LARGE_IMPORT_ROWS customers
// with balances (1,000,000 unless set) is imported, then exported, by the real `loyalty` command
// while a server process answers `GET /v1/customers` for another account at a steady 50 requests a
// second. For each engine it prints the import's rows per second in each tenth of the file (read
// from the progress line the command writes on stderr), the export's (from the size of the file it
// writes), the command's peak resident memory and its first and second halves, and the API's
// latencies meanwhile. The run's correctness (every row once, the export matching, memory flat, no
// failed read) is test/imports/large.test.ts's, on a smaller file; this only measures, but stops
// on a run that went wrong rather than report its figures.
// Settings: LARGE_IMPORT_ROWS (1,000,000), BENCH_ENGINES (`sqlite,postgres`), BENCH_DATABASE_URL.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../src/clock.js';
import { createServices } from '../src/services.js';
import { openDb } from '../src/storage/db.js';
import { migrateToLatest } from '../src/storage/migrator.js';
import { settle } from './limits/measure.js';
import { ENGINES, log } from './limits/settings.js';
import { freshPostgresSchema, PG_URL, peakRssMiB, postgresAnswers, ROOT, startService } from './processes.js';

const ROWS = Number(process.env.LARGE_IMPORT_ROWS ?? 1_000_000);
const DATA = join(ROOT, 'bench', '.imports');
/** The read route's steady traffic while a run goes on: an app's, not a load generator's. */
const READS_PER_SECOND = 50;
/** How often the command's memory, progress and output file are read. */
const SAMPLE_MS = 200;
/** The parts of the file whose rates are shown. */
const TENTHS = 10;

interface Sample {
  ms: number;
  /** Rows the command has applied (import) or bytes it has written (export) so far. */
  done: number;
  rssMb: number;
}

interface Run {
  seconds: number;
  /** From the start of the process to its first batch (modules loaded, file hashed, connected). */
  startSeconds: number;
  rowsPerSecondByTenth: number[];
  peakRssMb: number;
  /** The highest resident memory in each half of the run from its first batch on, to see it stay flat. */
  rssByHalfMb: { first: number; second: number } | null;
  api: Latencies;
}

interface Latencies {
  requests: number;
  failures: number;
  p50: number;
  p99: number;
  max: number;
}

const rssMb = (pid: number) => {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
};

/**
 * Runs `loyalty args` and samples it every SAMPLE_MS: its resident memory and `progress()` (rows
 * or bytes done so far). Resolves once it has exited; a non-zero exit stops the bench.
 */
async function sampled(
  args: string[],
  env: Record<string, string>,
  progress: (child: ChildProcess, stderr: () => string) => number,
) {
  const started = performance.now();
  const child = spawn(process.execPath, [join(ROOT, 'bin/loyalty.js'), ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const samples: Sample[] = [];
  let peak = 0;
  const timer = setInterval(() => {
    const pid = child.pid ?? 0;
    peak = Math.max(peak, peakRssMiB(pid));
    samples.push({ ms: performance.now() - started, done: progress(child, () => stderr), rssMb: rssMb(pid) });
  }, SAMPLE_MS);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearInterval(timer);
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`loyalty ${args.join(' ')} exited with ${code}:\n${stderr}`);
  return { ms, samples, peakMb: Math.round(Math.max(peak, ...samples.map((s) => s.rssMb))), stdout };
}

/**
 * Rows per second in each tenth of `total` (rows, or bytes standing for rows): from the first
 * sample with anything done to the sample at which each tenth was reached, the last ending at the
 * exit. `rowsPerUnit` turns bytes into rows.
 */
function byTenth(samples: Sample[], endMs: number, total: number, rowsPerUnit: number) {
  const working = samples.filter((s) => s.done > 0);
  const points = [{ ms: working[0]?.ms ?? 0, done: working[0]?.done ?? 0 }];
  for (let k = 1; k < TENTHS; k++) {
    const reached = working.find((s) => s.done >= (total * k) / TENTHS);
    if (reached && reached.ms > (points.at(-1)?.ms ?? 0)) points.push(reached);
  }
  points.push({ ms: endMs, done: total });
  const rates: number[] = [];
  for (let i = 1; i < points.length; i++) {
    const [from, to] = [points[i - 1]!, points[i]!];
    rates.push(Math.round(((to.done - from.done) * rowsPerUnit) / Math.max(0.001, (to.ms - from.ms) / 1000)));
  }
  return { startMs: points[0]!.ms, rates };
}

/** The highest memory of each half of the run from `fromMs` on; null for a run too short to halve. */
function halves(samples: Sample[], fromMs: number) {
  const steady = samples.filter((s) => s.ms >= fromMs && s.rssMb > 0);
  if (steady.length < 10) return null;
  const half = steady.length >> 1;
  const peakOf = (some: Sample[]) => Math.round(Math.max(...some.map((s) => s.rssMb)));
  return { first: peakOf(steady.slice(0, half)), second: peakOf(steady.slice(half)) };
}

/** Latencies (ms) of `GET /v1/customers`, READS_PER_SECOND of them on a fixed schedule, until `done` settles. */
async function readWhile(url: string, key: string, done: Promise<unknown>): Promise<Latencies> {
  const latencies: number[] = [];
  let failures = 0;
  const sent: Promise<void>[] = [];
  const read = async () => {
    const started = performance.now();
    try {
      const response = await fetch(`${url}/v1/customers?limit=50`, { headers: { authorization: `Bearer ${key}` } });
      await response.arrayBuffer();
      if (response.status === 200) latencies.push(performance.now() - started);
      else failures++;
    } catch {
      failures++;
    }
  };
  const timer = setInterval(() => sent.push(read()), 1000 / READS_PER_SECOND);
  await done.catch(() => undefined);
  clearInterval(timer);
  await Promise.all(sent);
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 10) / 10;
  return { requests: latencies.length, failures, p50: at(0.5), p99: at(0.99), max: at(1) };
}

/** The rows the import's progress line last showed (`… · 123,456 rows · …`), 0 before its first. */
function importedRows(stderr: string): number {
  const lines = stderr.split('\r');
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = / · ([\d,]+) rows · /.exec(lines[i] ?? '');
    if (match) return Number(match[1]?.replaceAll(',', ''));
  }
  return 0;
}

async function benchEngine(engine: 'sqlite' | 'postgres') {
  const dir = join(DATA, engine);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const url = engine === 'sqlite' ? `sqlite:${join(dir, 'loyalty.db')}` : await freshPostgresSchema('bench_imports');
  const db = openDb(url, { sqliteSynchronous: 'NORMAL', poolMax: 2 });
  let seeded: { accountId: number; readKey: string };
  try {
    await migrateToLatest(db);
    const services = createServices(db, { clock: systemClock, accessTokenTtlSeconds: 3600 });
    const moving = await services.accounts.create('Moving in');
    await services.vipTiers.create(moving.id, { name: 'Silver', milestone: 500 });
    // The read route's account: another merchant, with a page of customers to list.
    const other = await services.accounts.create('Already here');
    for (let i = 0; i < 50; i++) await services.customers.create(other.id, { email: `r${i}@here.example` });
    seeded = { accountId: moving.id, readKey: (await services.auth.createApiKey(other.id)).key };
  } finally {
    await db.close();
  }

  log(`\n== ${engine}: writing ${ROWS.toLocaleString('en-US')} rows`);
  const file = join(dir, 'customers.csv');
  const out = createWriteStream(file);
  out.write('email,first_name,last_name,points_balance,points_earned\n');
  for (let i = 1; i <= ROWS; i++) {
    if (!out.write(`c${i}@moving.example,First ${i},Last ${i},${i % 700},${(i % 700) + (i % 300)}\n`)) {
      await once(out, 'drain');
    }
  }
  out.end();
  await once(out, 'finish');

  const env = { DATABASE_URL: url };
  const server = await startService(url, 1);
  try {
    await settle(engine === 'postgres');
    log(`== ${engine}: import`);
    const account = String(seeded.accountId);
    // Without --json the command draws its progress line on stderr: the rows applied so far.
    const importing = sampled(['import', 'customers', '--account', account, '--file', file], env, (_, stderr) =>
      importedRows(stderr()),
    );
    const importApi = await readWhile(server.url, seeded.readKey, importing);
    const imported = await importing;
    const expected = `imported: ${ROWS} rows: ${ROWS} created, 0 updated, 0 unchanged, 0 refused`;
    if (imported.stdout.trim() !== expected) throw new Error(`the import went wrong:\n${imported.stdout}`);

    await settle(engine === 'postgres');
    log(`== ${engine}: export`);
    const exportFile = join(dir, 'export.csv');
    const size = () => {
      try {
        return statSync(exportFile).size;
      } catch {
        return 0;
      }
    };
    const exporting = sampled(['export', 'customers', '--account', account, '--output', exportFile], env, size);
    const exportApi = await readWhile(server.url, seeded.readKey, exporting);
    const exported = await exporting;
    const bytes = size();
    const lines = readFileSync(exportFile, 'utf8').trimEnd().split('\n').length;
    if (lines !== ROWS + 1) throw new Error(`the export holds ${lines - 1} rows, not ${ROWS}`);

    const report = (run: Awaited<ReturnType<typeof sampled>>, total: number, rowsPerUnit: number, api: Latencies) => {
      const { startMs, rates } = byTenth(run.samples, run.ms, total, rowsPerUnit);
      return {
        seconds: Math.round(run.ms / 100) / 10,
        startSeconds: Math.round(startMs / 100) / 10,
        rowsPerSecondByTenth: rates,
        peakRssMb: run.peakMb,
        rssByHalfMb: halves(run.samples, startMs),
        api,
      } satisfies Run;
    };
    return {
      engine,
      rows: ROWS,
      import: report(imported, ROWS, 1, importApi),
      // Bytes stand for rows: every row of the file is about as long as the next.
      export: report(exported, bytes, ROWS / bytes, exportApi),
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function print(result: Awaited<ReturnType<typeof benchEngine>>): void {
  const n = (value: number) => value.toLocaleString('en-US');
  for (const [name, run] of [
    ['import', result.import],
    ['export', result.export],
  ] as const) {
    const memory = run.rssByHalfMb ? `, halves ${run.rssByHalfMb.first} then ${run.rssByHalfMb.second} MiB` : '';
    log(
      `${result.engine} ${name}: ${n(result.rows)} rows in ${run.seconds} s (${n(Math.round(result.rows / run.seconds))} rows/s; ` +
        `first batch after ${run.startSeconds} s), peak RSS ${run.peakRssMb} MiB${memory}`,
    );
    // A run shorter than ten samples passes several tenths between two of them: those are merged.
    const parts = run.rowsPerSecondByTenth.length;
    const merged = parts < TENTHS ? ` (${parts} parts: tenths passed between two samples are merged)` : '';
    log(`  rows/s by tenth${merged}: ${run.rowsPerSecondByTenth.map(n).join(' · ')}`);
    log(
      `  GET /v1/customers meanwhile: ${n(run.api.requests)} answered, ${run.api.failures} failed, ` +
        `p50 ${run.api.p50} ms, p99 ${run.api.p99} ms, max ${run.api.max} ms`,
    );
  }
}

async function main(): Promise<void> {
  const results = [];
  for (const engine of ENGINES) {
    if (engine === 'postgres' && !(await postgresAnswers())) {
      log(`PostgreSQL skipped: nothing answers at ${PG_URL}`);
      continue;
    }
    results.push(await benchEngine(engine));
  }
  rmSync(DATA, { recursive: true, force: true });
  log('');
  for (const result of results) print(result);
  log(`\n${JSON.stringify(results)}`);
}

await main();
