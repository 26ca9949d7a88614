// `npm run bench:ab -- A [B] [sqlite|postgres]`: an A/B of the hot routes in one run, the service
// at git commit A against the one at commit B (this checkout when B is left out), on one machine.
// Each side is built from its own commit with its own dependencies (its lockfile's, installed once
// and kept under bench/.ab/deps/) and serves its own database, made and seeded by that commit's own
// bench/write-scenarios.ts `prepare`: an older service refuses a database migrated by a newer one,
// and a side measured on the other's schema would not be that commit. The same bodies go to both.
// Each route is measured in rounds, A then B, then B then A, so that neither side always runs
// first; the figures are medians of each side's runs. BENCH_ONLY picks routes; BENCH_RUNS (rounds,
// default 3) and BENCH_DURATION (s, 8) as for `npm run bench`.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { type Figures, type Load, median, settle, wrk } from './limits/measure.js';
import { DATA, DURATION, log, RUNS, WARMUP, wanted } from './limits/settings.js';
import { PG_URL, ROOT, type Server, startService } from './processes.js';
import type { BenchAccount } from './seed.js';
import { type Setup, writeScenarios } from './write-scenarios.js';

const args = process.argv.slice(2);
const engine = args.includes('sqlite') ? 'sqlite' : 'postgres';
const [refA, refB] = args.filter((arg) => arg !== 'sqlite' && arg !== 'postgres');
if (!refA) {
  process.stderr.write('usage: npm run bench:ab -- A [B] [sqlite|postgres]   (A, B: git commits; B: this checkout)\n');
  process.exit(2);
}
const database = engine === 'postgres';
const WORKTREES = join(ROOT, 'bench', '.ab');
const DEPENDENCIES = join(WORKTREES, 'deps');
type SideName = 'A' | 'B';

/**
 * `dir`'s node_modules: this checkout's when the lockfiles match, else the lockfile's own install,
 * made by `npm ci` once (it compiles better-sqlite3) and kept for the next run under its hash.
 */
function installDependencies(dir: string): void {
  const lockfile = readFileSync(join(dir, 'package-lock.json'));
  if (lockfile.equals(readFileSync(join(ROOT, 'package-lock.json')))) {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    return;
  }
  const hash = createHash('sha256').update(lockfile).update(process.version).digest('hex').slice(0, 16);
  const kept = join(DEPENDENCIES, hash);
  if (!existsSync(kept)) {
    log(`  installing ${dir}'s dependencies (its lockfile differs from this checkout's; kept in ${kept})`);
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: 'inherit' });
    execFileSync('npm', ['rebuild', 'better-sqlite3'], { cwd: dir, stdio: 'inherit' });
    mkdirSync(DEPENDENCIES, { recursive: true });
    renameSync(join(dir, 'node_modules'), kept);
  }
  symlinkSync(kept, join(dir, 'node_modules'));
}

/** The service and its benchmark code built at `commit`, in a worktree with its own dependencies. */
function buildAt(commit: string, side: SideName): string {
  const dir = join(WORKTREES, side);
  if (existsSync(dir)) execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT });
  execFileSync('git', ['worktree', 'add', '--detach', dir, commit], { cwd: ROOT, stdio: 'ignore' });
  installDependencies(dir);
  for (const project of ['tsconfig.build.json', 'tsconfig.bench.json']) {
    execFileSync(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', project], {
      cwd: dir,
      stdio: 'inherit',
    });
  }
  return dir;
}

/** What a side's `prepare` made, as it crosses from the child that ran it: functions as tables. */
interface Prepared {
  url: string;
  productId: number;
  account: Omit<BenchAccount, 'existingDistinctIds' | 'customerId'> & { distinctIds: string[]; customerIds: number[] };
}

/**
 * A database made, migrated and seeded by the commit built in `root` (its own `prepare`, run in a
 * child process from that build); on PostgreSQL moved to a schema of the side's own.
 */
async function prepareSide(root: string, side: SideName): Promise<{ url: string; setup: Setup }> {
  const dir = join(DATA, side);
  mkdirSync(dir, { recursive: true });
  const script = `
    import { prepare } from ${JSON.stringify(join(root, 'dist-bench/bench/write-scenarios.js'))};
    const { url, setup } = await prepare(${JSON.stringify(engine)}, ${JSON.stringify(dir)}, (line) => process.stderr.write(line + '\\n'));
    const { existingDistinctIds, customerId, ...account } = setup.account;
    const range = Array.from({ length: account.existingCount }, (_, i) => i);
    process.stdout.write(JSON.stringify({ url, productId: setup.productId, account: {
      ...account, distinctIds: range.map(existingDistinctIds), customerIds: range.map(customerId) } }));`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  const prepared = JSON.parse(output) as Prepared;
  const { distinctIds, customerIds, ...account } = prepared.account;
  const setup: Setup = {
    productId: prepared.productId,
    account: {
      ...account,
      existingDistinctIds: (i) => distinctIds[i % distinctIds.length] as string,
      customerId: (i) => customerIds[i % customerIds.length] as number,
    },
  };
  if (!database) return { url: prepared.url, setup };
  const schema = `loyalty_ab_${side.toLowerCase()}`;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`drop schema if exists ${schema} cascade`);
    await client.query(`alter schema loyalty_limits rename to ${schema}`);
  } finally {
    await client.end();
  }
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url: url.toString(), setup };
}

interface Route {
  name: string;
  /** The load on a side's server, from that side's data; `run` and `side` keep every body new. */
  load: (server: string, setup: Setup, side: SideName) => Load;
}

/**
 * The routes of issue 50's table: the page read, create_or_update split into new identities and
 * updates (the two cost differently), activities and purchases; the writes' bodies are those of
 * `npm run bench` (bench/write-scenarios.ts).
 */
function routes(): Route[] {
  const write =
    (name: string, pick?: (n: number) => number): Route['load'] =>
    (server, setup, side) => {
      const scenario = writeScenarios(setup).find((candidate) => candidate.name === name);
      if (!scenario) throw new Error(`no write scenario named ${name}`);
      const at = pick ?? ((n: number) => n);
      return {
        url: `${server}${scenario.path}`,
        method: 'POST',
        headers: { authorization: `Bearer ${scenario.token}` },
        bodies: (run) => scenario.many((n) => scenario.body(at(n), `ab-${side}-${run}-${n}`))(),
      };
    };
  const identities = 'create_or_update (half new)';
  return [
    {
      name: 'GET /v1/earning_rules?limit=50',
      load: (server, setup) => ({
        url: `${server}/v1/earning_rules?limit=50`,
        headers: { authorization: `Bearer ${setup.account.apiKey}` },
      }),
    },
    // The scenario's even bodies are new identities, its odd ones updates.
    { name: 'create_or_update, new identities', load: write(identities, (n) => 2 * n) },
    { name: 'create_or_update, updates', load: write(identities, (n) => 2 * n + 1) },
    { name: 'activities (new orders, 2 rules)', load: write('activities (new orders, 2 rules)') },
    { name: 'purchases (fixed, 100 points)', load: write('purchases (fixed, 100 points)') },
  ];
}

function summary(runs: Figures[]) {
  const pick = (key: 'rps' | 'p99' | 'serverUs' | 'databaseUs') => median(runs.map((run) => run[key] ?? 0));
  return { rps: pick('rps'), p99: pick('p99'), serverUs: pick('serverUs'), databaseUs: pick('databaseUs') };
}

rmSync(DATA, { recursive: true, force: true });
mkdirSync(DATA, { recursive: true });
const roots: Record<SideName, string> = { A: buildAt(refA, 'A'), B: refB ? buildAt(refB, 'B') : ROOT };
const sides = {} as Record<SideName, { server: Server; setup: Setup }>;
const rows: string[] = [];
try {
  for (const side of ['A', 'B'] as const) {
    log(`side ${side} (${side === 'A' ? refA : (refB ?? 'this checkout')}): its own database`);
    const { url, setup } = await prepareSide(roots[side], side);
    sides[side] = { setup, server: await startService(url, 1, [], {}, roots[side]) };
  }
  for (const route of routes()) {
    if (!wanted(route.name)) continue;
    const runs: Record<SideName, Figures[]> = { A: [], B: [] };
    const load = (side: SideName) => route.load(sides[side].server.url, sides[side].setup, side);
    const measure = (side: SideName, seconds: number) => wrk(load(side), seconds, sides[side].server.pids, database);
    // A side's first seconds on a route cost up to 1.8× its later ones (a fresh server on SQLite:
    // 257 then 437 req/s, 2,859 then 1,592 µs a request): each side warms up as long as it is measured.
    for (const side of ['A', 'B'] as const) await measure(side, Math.max(WARMUP, DURATION));
    for (let round = 0; round < RUNS; round++) {
      for (const side of round % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
        await settle(database);
        runs[side].push(await measure(side, DURATION));
      }
    }
    const a = summary(runs.A);
    const b = summary(runs.B);
    const line =
      `| ${route.name} | ${a.rps.toFixed(0)} | ${b.rps.toFixed(0)} | ${(b.rps / a.rps).toFixed(2)} | ` +
      `${a.p99.toFixed(1)} | ${b.p99.toFixed(1)} | ${a.serverUs.toFixed(0)} | ${b.serverUs.toFixed(0)} | ` +
      `${(b.serverUs / a.serverUs).toFixed(2)} |` +
      (database ? ` ${a.databaseUs.toFixed(0)} | ${b.databaseUs.toFixed(0)} |` : '');
    log(
      `  ${route.name}: A ${runs.A.map((r) => r.rps.toFixed(0)).join(', ')}; B ${runs.B.map((r) => r.rps.toFixed(0)).join(', ')}`,
    );
    rows.push(line);
  }
} finally {
  await Promise.all(Object.values(sides).map(({ server }) => server.stop()));
  rmSync(DATA, { recursive: true, force: true });
  for (const root of new Set([roots.A, roots.B])) {
    if (root !== ROOT) execFileSync('git', ['worktree', 'remove', '--force', root], { cwd: ROOT });
  }
}
log(
  `\nA: ${refA}; B: ${refB ?? 'this checkout'}; ${engine}; medians of ${RUNS} runs of ${DURATION} s each, 50 connections\n`,
);
log(
  '| route | A req/s | B req/s | B / A | A p99 ms | B p99 ms | A server µs/req | B server µs/req | B / A |' +
    (database ? ' A database µs/req | B database µs/req |' : ''),
);
log(`|---|---:|---:|---:|---:|---:|---:|---:|---:|${database ? '---:|---:|' : ''}`);
for (const row of rows) log(row);
