import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { withServices } from '../helpers/seed.js';
import { ROOT, type ServerProcess, startServer } from '../helpers/server-process.js';

// Issue 32, "large files": a generated file of LARGE_IMPORT_ROWS customers with balances (10,000
// unless set) imported and exported by the real CLI while a server process answers
// `GET /v1/customers` for another account. It checks that every row arrived once, that the export
// holds each with its balance, that no read failed meanwhile, and that memory stays flat (the
// second half of the import holds no more than the first, within a margin). How fast, how much
// memory and the API's latencies are measured, on a million rows, by `npm run bench:imports`
// (bench/imports.ts): a benchmark is not a test.

const ROWS = Number(process.env.LARGE_IMPORT_ROWS ?? 10_000);
/** What the second half of a run may hold beyond the first's peak (a GC's slack, not a leak). */
const FLAT_MARGIN_MB = 48;
/** How long a CLI process takes to load and connect, before its memory is compared. */
const WARM_UP_MS = 3000;
/** The read route's steady traffic while a run goes on. */
const READS_PER_SECOND = 50;
/** How often the CLI's resident memory is read: often enough to halve even a short run. */
const SAMPLE_MS = 50;
/** The test's limit: 20 times the ~2 ms a row took on a busy two-core machine, and the processes' start. */
const TIMEOUT_MS = 120_000 + ROWS * 40;

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
  const timer = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      samples.push({ ms: performance.now() - started, rssMb: kb / 1024 });
    } catch {
      // The process has just ended.
    }
  }, SAMPLE_MS);
  const [code] = (await once(child, 'exit')) as [number];
  clearInterval(timer);
  // Once started (modules loaded, connections open), the halves of the run are compared.
  const steady = samples.filter((sample) => sample.ms > WARM_UP_MS);
  const half = steady.length >> 1;
  const peakOf = (some: typeof samples) => Math.max(0, ...some.map((s) => s.rssMb));
  return {
    code,
    stdout,
    stderr,
    /** Null for a run too short to have a steady state worth comparing. */
    halves:
      steady.length < 10 ? null : { firstMb: peakOf(steady.slice(0, half)), secondMb: peakOf(steady.slice(half)) },
  };
}

/**
 * The statuses of `GET /v1/customers` other than 200, READS_PER_SECOND requests sent on a fixed
 * schedule (an app's steady traffic, not a load generator competing for the two cores) until
 * `done` settles; and how many were answered.
 */
async function readWhile(url: string, key: string, done: Promise<unknown>) {
  let answered = 0;
  const failures: number[] = [];
  const sent: Promise<void>[] = [];
  const read = async () => {
    const response = await fetch(`${url}/v1/customers?limit=50`, { headers: { authorization: `Bearer ${key}` } });
    await response.arrayBuffer();
    if (response.status === 200) answered++;
    else failures.push(response.status);
  };
  const timer = setInterval(() => sent.push(read()), 1000 / READS_PER_SECOND);
  await done.catch(() => undefined);
  clearInterval(timer);
  await Promise.all(sent);
  return { answered, failures };
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
  }, 120_000);

  afterAll(async () => {
    await server?.stop('SIGKILL');
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'imports every row once with flat memory, then exports them all, while the API answers',
    async () => {
      const importing = measured(
        ['import', 'customers', '--account', String(accountId), '--file', file, '--json'],
        env,
      );
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
      expect(readsDuringImport.answered).toBeGreaterThan(0);
      expect(readsDuringExport.failures).toEqual([]);

      // Flat: what the second half of the import held is what the first held, within a GC's slack.
      // The import always runs long enough to be halved (SAMPLE_MS); the export, a few seconds, may not.
      expect(imported.halves, 'the import ended before its memory could be compared').not.toBeNull();
      for (const run of [imported, exported]) {
        if (run.halves) expect(run.halves.secondMb).toBeLessThan(run.halves.firstMb + FLAT_MARGIN_MB);
      }
    },
    TIMEOUT_MS,
  );
});
