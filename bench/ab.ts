// `npm run bench:ab -- A [B] [sqlite|postgres]`: an A/B of the write routes in one run, the service
// built at git commit A against the one built at commit B (this checkout's files when B is left
// out), both on the same data and machine. Each route is measured in rounds, A then B, then B then
// A, so that neither side always runs first; the figures are medians of each side's runs. For
// showing what one change to a write path did (issue 33: a round trip fewer per write) without a
// second run's noise in between. Each commit is built in a git worktree under bench/.ab/ (removed
// at the end). BENCH_ONLY picks routes; BENCH_RUNS (rounds, default 3) and BENCH_DURATION (s, 8)
// as for `npm run bench`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { type Figures, median, settle, wrk } from './limits/measure.js';
import { DATA, DURATION, log, RUNS, WARMUP, wanted } from './limits/settings.js';
import { ROOT, type Server, startService } from './processes.js';
import { prepare, writeScenarios } from './write-scenarios.js';

const args = process.argv.slice(2);
const engine = args.includes('sqlite') ? 'sqlite' : 'postgres';
const [refA, refB] = args.filter((arg) => arg !== 'sqlite' && arg !== 'postgres');
if (!refA) {
  process.stderr.write('usage: npm run bench:ab -- A [B] [sqlite|postgres]   (A, B: git commits; B: this checkout)\n');
  process.exit(2);
}
const database = engine === 'postgres';
const WORKTREES = join(ROOT, 'bench', '.ab');

/** The service built at `commit`, in a worktree beside this checkout's dependencies. */
function buildAt(commit: string, side: string): string {
  const dir = join(WORKTREES, side);
  if (existsSync(dir)) execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT });
  execFileSync('git', ['worktree', 'add', '--detach', dir, commit], { cwd: ROOT, stdio: 'ignore' });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: dir,
    stdio: 'inherit',
  });
  return dir;
}

function summary(runs: Figures[]) {
  const pick = (key: 'rps' | 'p99' | 'serverUs' | 'databaseUs') => median(runs.map((run) => run[key] ?? 0));
  return { rps: pick('rps'), p99: pick('p99'), serverUs: pick('serverUs'), databaseUs: pick('databaseUs') };
}

const roots = { A: buildAt(refA, 'A'), B: refB ? buildAt(refB, 'B') : ROOT };
rmSync(DATA, { recursive: true, force: true });
mkdirSync(DATA, { recursive: true });
const { url, setup } = await prepare(engine, DATA, log);
const servers: Record<'A' | 'B', Server> = {
  A: await startService(url, 1, [], {}, roots.A),
  B: await startService(url, 1, [], {}, roots.B),
};
const rows: string[] = [];
try {
  for (const scenario of writeScenarios(setup)) {
    if (!wanted(scenario.name)) continue;
    const runs: Record<'A' | 'B', Figures[]> = { A: [], B: [] };
    const load = (side: 'A' | 'B') => ({
      url: `${servers[side].url}${scenario.path}`,
      method: 'POST' as const,
      headers: { authorization: `Bearer ${scenario.token}` },
      bodies: (run: number) => scenario.many((n) => scenario.body(n, `ab-${side}-${run}-${n}`))(),
    });
    for (const side of ['A', 'B'] as const) await wrk(load(side), WARMUP, servers[side].pids, database);
    for (let round = 0; round < RUNS; round++) {
      for (const side of round % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
        await settle(database);
        runs[side].push(await wrk(load(side), DURATION, servers[side].pids, database));
      }
    }
    const a = summary(runs.A);
    const b = summary(runs.B);
    const line =
      `| ${scenario.name} | ${a.rps.toFixed(0)} | ${b.rps.toFixed(0)} | ${(b.rps / a.rps).toFixed(2)} | ` +
      `${a.p99.toFixed(1)} | ${b.p99.toFixed(1)} | ${a.serverUs.toFixed(0)} | ${b.serverUs.toFixed(0)} |` +
      (database ? ` ${a.databaseUs.toFixed(0)} | ${b.databaseUs.toFixed(0)} |` : '');
    log(
      `  ${scenario.name}: A ${runs.A.map((r) => r.rps.toFixed(0)).join(', ')}; B ${runs.B.map((r) => r.rps.toFixed(0)).join(', ')}`,
    );
    rows.push(line);
  }
} finally {
  await Promise.all([servers.A.stop(), servers.B.stop()]);
  rmSync(DATA, { recursive: true, force: true });
  for (const root of new Set([roots.A, roots.B])) {
    if (root !== ROOT) execFileSync('git', ['worktree', 'remove', '--force', root], { cwd: ROOT });
  }
}
log(
  `\nA: ${refA}; B: ${refB ?? 'this checkout'}; ${engine}; medians of ${RUNS} runs of ${DURATION} s each, 50 connections\n`,
);
log(
  '| route | A req/s | B req/s | B / A | A p99 ms | B p99 ms | A server µs/req | B server µs/req |' +
    (database ? ' A database µs/req | B database µs/req |' : ''),
);
log(`|---|---:|---:|---:|---:|---:|---:|---:|${database ? '---:|---:|' : ''}`);
for (const row of rows) log(row);
