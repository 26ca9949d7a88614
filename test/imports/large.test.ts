import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { withServices } from '../helpers/seed.js';
import { ROOT, type ServerProcess, startServer } from '../helpers/server-process.js';

// Issue 32, "large files": a generated file of LARGE_IMPORT_ROWS customers with balances
// (1,000,000 by hand: `LARGE_IMPORT_ROWS=1000000 npx vitest run test/imports/large.test.ts`; the
// suite's 20,000 keep it inside CI's time) imported and exported by the real CLI while a server
// process answers `GET /v1/customers` for another account. It checks every row arrived once and
// that memory stays flat (the second half of a run holds no more than the first, within a
// margin); rows per second, peak RSS and the API's latencies are reported, never asserted
// (test-artifacts/imports/large-<engine>.json).

const ROWS = Number(process.env.LARGE_IMPORT_ROWS ?? 20_000);
/** What the second half of a run may hold beyond the first's peak (a GC's slack, not a leak). */
const FLAT_MARGIN_MB = 48;
/** How long a CLI process takes to load and connect, before its memory is compared. */
const WARM_UP_MS = 3000;
/** The read route's steady traffic while a run goes on. */
const READS_PER_SECOND = 50;
/** How often the CLI's resident memory is read. */
const SAMPLE_MS = 200;
const REPORTS = join(ROOT, 'test-artifacts', 'imports');

/** A run of the real `loyalty` command, with its resident memory sampled from /proc while it runs. */
async function measured(args: string[], env: Record<string, string>) {
  const started = performance.now();
  const child = spawn(process.execPath, [`${ROOT}bin/loyalty.js`, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const samples: { ms: number; rssMb: number }[] = [];
  let peakMb = 0;
  const timer = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      samples.push({ ms: performance.now() - started, rssMb: kb('VmRSS') / 1024 });
      peakMb = Math.max(peakMb, kb('VmHWM') / 1024);
    } catch {
      // The process has just ended.
    }
  }, SAMPLE_MS);
  const [code] = (await once(child, 'exit')) as [number];
  clearInterval(timer);
  const seconds = (performance.now() - started) / 1000;
  // Once started (modules loaded, connections open), the halves of the run are compared.
  const steady = samples.filter((sample) => sample.ms > WARM_UP_MS);
  const half = steady.length >> 1;
  const peakOf = (some: typeof samples) => Math.max(0, ...some.map((s) => s.rssMb));
  return {
    code,
    stdout,
    stderr,
    seconds,
    peakMb: Math.round(Math.max(peakMb, peakOf(samples))),
    /** Null for a run too short to have a steady state worth comparing. */
    halves:
      steady.length < 10 ? null : { firstMb: peakOf(steady.slice(0, half)), secondMb: peakOf(steady.slice(half)) },
  };
}

/**
 * Latencies (ms) of `GET /v1/customers`, READS_PER_SECOND of them sent on a fixed schedule (an
 * app's steady traffic, not a load generator competing for the two cores) until `done` settles.
 */
async function readWhile(url: string, key: string, done: Promise<unknown>) {
  const latencies: number[] = [];
  const failures: number[] = [];
  const sent: Promise<void>[] = [];
  const read = async () => {
    const started = performance.now();
    const response = await fetch(`${url}/v1/customers?limit=50`, { headers: { authorization: `Bearer ${key}` } });
    await response.arrayBuffer();
    if (response.status === 200) latencies.push(performance.now() - started);
    else failures.push(response.status);
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

describe(`a ${ROWS.toLocaleString('en-US')}-row import and export on ${testEngine}`, () => {
  let dir: string;
  let database: TestDatabase;
  let server: ServerProcess | undefined;
  let env: Record<string, string>;
  let accountId = 0;
  let readKey = '';
  let file = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loyalty-large-'));
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
    ({ accountId, readKey } = await withServices(database.url, async (services) => {
      const moving = await services.accounts.create('Moving in');
      await services.vipTiers.create(moving.id, { name: 'Silver', milestone: 500 });
      // The read route's account: another merchant, with a page of customers to list.
      const other = await services.accounts.create('Already here');
      for (let i = 0; i < 50; i++) await services.customers.create(other.id, { email: `r${i}@here.example` });
      const key = await services.auth.createApiKey(other.id);
      return { accountId: moving.id, readKey: key.key };
    }));
    file = join(dir, 'customers.csv');
    const out = createWriteStream(file);
    out.write('email,first_name,last_name,points_balance,points_earned\n');
    for (let i = 1; i <= ROWS; i++) {
      if (!out.write(`c${i}@moving.example,First ${i},Last ${i},${i % 700},${(i % 700) + (i % 300)}\n`)) {
        await once(out, 'drain');
      }
    }
    out.end();
    await once(out, 'finish');
    server = await startServer({ ...env, RATE_LIMIT_PER_SECOND: '0' });
  }, 600_000);

  afterAll(async () => {
    await server?.stop('SIGKILL');
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('imports every row once with flat memory, then exports them all, while the API answers', async () => {
    const importing = measured(['import', 'customers', '--account', String(accountId), '--file', file, '--json'], env);
    const readsDuringImport = await readWhile(server!.url, readKey, importing);
    const imported = await importing;
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toEqual({
      rows: ROWS,
      created: ROWS,
      updated: 0,
      unchanged: 0,
      refused: 0,
      refusals: [],
    });

    const exportFile = join(dir, 'export.csv');
    const exporting = measured(['export', 'customers', '--account', String(accountId), '--output', exportFile], env);
    const readsDuringExport = await readWhile(server!.url, readKey, exporting);
    const exported = await exporting;
    expect(exported.code, exported.stderr).toBe(0);
    const lines = readFileSync(exportFile, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(ROWS + 1);
    // Each customer once, with the balance and points earned of its row.
    const emails = new Set(lines.slice(1).map((line) => line.split(',')[0]));
    expect(emails.size).toBe(ROWS);
    const sample = Math.ceil(ROWS / 3);
    expect(lines.find((line) => line.startsWith(`c${sample}@`))).toMatch(
      new RegExp(
        `^c${sample}@moving\\.example,First ${sample},Last ${sample},,member,${sample % 700},${(sample % 700) + (sample % 300)},`,
      ),
    );
    expect(readsDuringImport.failures).toEqual([]);
    expect(readsDuringExport.failures).toEqual([]);

    const report = {
      engine: testEngine,
      rows: ROWS,
      import: {
        seconds: Math.round(imported.seconds),
        rowsPerSecond: Math.round(ROWS / imported.seconds),
        peakRssMb: imported.peakMb,
        rssByHalfMb: imported.halves,
        api: readsDuringImport,
      },
      export: {
        seconds: Math.round(exported.seconds * 10) / 10,
        rowsPerSecond: Math.round(ROWS / exported.seconds),
        peakRssMb: exported.peakMb,
        rssByHalfMb: exported.halves,
        api: readsDuringExport,
      },
    };
    mkdirSync(REPORTS, { recursive: true });
    writeFileSync(join(REPORTS, `large-${testEngine}.json`), `${JSON.stringify(report, null, 2)}\n`);
    console.log(`[large import] ${JSON.stringify(report)}`);
    // Flat: what the second half of each run held is what the first held, within a GC's slack.
    for (const run of [imported, exported]) {
      if (run.halves) expect(run.halves.secondMb).toBeLessThan(run.halves.firstMb + FLAT_MARGIN_MB);
    }
  }, 7_200_000);
});
