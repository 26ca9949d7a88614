// Writes docs/scenarios.md from one run's figures: nothing in that file is typed by hand.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { EngineResult, Row } from './results.js';

export interface Report {
  started: Date;
  finished: Date;
  settings: { duration: number; warmup: number; runs: number; connections: number; fixedRate: number; quick: boolean };
  machine: { cpu: string; memoryGiB: number; node: string; postgres: string | null };
  engines: EngineResult[];
  peers: { ceiling: Row; ceilingFixed: Row; jsonServer: Row; memory: Record<string, number> };
  skipped: string[];
}

const n0 = (v: number) => Math.round(v).toLocaleString('en-US');
const ratio = (a: number, b: number) => (b === 0 ? 'n/a' : (a / b).toFixed(2));
const ms = (v: number) => `${v} ms`;
const find = (rows: Row[] | undefined, name: string) => rows?.find((r) => r.name === name);

function rowsTable(rows: Row[], ceiling: Row, withCeiling: boolean): string[] {
  const lines = [
    `| scenario | req/s (median) | runs (req/s) | p50 | p99 |${withCeiling ? ' vs ceiling req/s | vs ceiling p99 |' : ''} errors / non-2xx |`,
    `|---|---:|---|---:|---:|${withCeiling ? '---:|---:|' : ''}---:|`,
  ];
  for (const row of rows) {
    const read = withCeiling && !row.name.startsWith('create_or_update') && !row.name.startsWith('activities');
    lines.push(
      `| ${row.name} | ${n0(row.rps)} | ${row.runs.map(n0).join(', ')} | ${ms(row.p50)} | ${ms(row.p99)} |` +
        (withCeiling
          ? ` ${read ? ratio(row.rps, ceiling.rps) : ''} | ${read ? ratio(row.p99, ceiling.p99) : ''} |`
          : '') +
        ` ${row.errors} / ${row.non2xx} |`,
    );
  }
  return lines;
}

function targets(report: Report): string[] {
  const { ceiling, jsonServer } = report.peers;
  const lines = ['| target | engine | measured | met |', '|---|---|---:|:---:|'];
  const check = (
    target: string,
    engine: string,
    value: number | undefined,
    ok: (v: number) => boolean,
    shown: (v: number) => string,
  ) => {
    if (value === undefined || Number.isNaN(value)) return;
    lines.push(`| ${target} | ${engine} | ${shown(value)} | ${ok(value) ? 'yes' : '**no**'} |`);
  };
  for (const engine of report.engines) {
    const rows = engine.workers[1]?.rows;
    const first = find(rows, 'earning_rules first page');
    const deep = find(rows, 'earning_rules page 100');
    const name = `${engine.engine}, WORKERS=1`;
    check(
      'earning-rules first page ≥ 0.7 × ceiling req/s',
      name,
      first && first.rps / ceiling.rps,
      (v) => v >= 0.7,
      (v) => `${v.toFixed(2)}×`,
    );
    check(
      'earning-rules first page ≥ 5 × json-server req/s',
      name,
      first && first.rps / jsonServer.rps,
      (v) => v >= 5,
      (v) => `${v.toFixed(1)}×`,
    );
    check(
      'page 100 ≥ 0.9 × first page req/s',
      name,
      first && deep && deep.rps / first.rps,
      (v) => v >= 0.9,
      (v) => `${v.toFixed(2)}×`,
    );
    const empty = find(engine.scale, 'create_or_update, empty account');
    const large = find(engine.scale, 'create_or_update, 1M identities');
    check(
      'create_or_update at 1M identities ≥ 0.8 × empty',
      name,
      empty && large && large.rps / empty.rps,
      (v) => v >= 0.8,
      (v) => `${v.toFixed(2)}×`,
    );
    for (const read of ['earning_rules first page', 'earning_rules page 100', 'referral_settings']) {
      const row = find(rows, read);
      check(
        `${read}: p99 at 50 connections ≤ 1.5 × ceiling p99`,
        name,
        row && row.p99 / ceiling.p99,
        (v) => v <= 1.5,
        (v) => `${v.toFixed(2)}× (${row?.p99} ms vs ${ceiling.p99} ms)`,
      );
    }
    for (const row of engine.fixedRate ?? []) {
      check(
        `${row.name}: p99 ≤ 5 ms at ${report.settings.fixedRate} req/s`,
        name,
        row.p99,
        (v) => v <= 5,
        (v) => `${v} ms`,
      );
    }
  }
  return lines;
}

/**
 * PostgreSQL's side of the scale scenarios, per request, from its statistics views over the
 * measured runs: what touching a million rows at random costs the database, next to the empty
 * account whose rows all stay in shared buffers.
 */
function databaseWork(rows: Row[]): string[] {
  const measured = rows.filter((row) => row.database);
  if (measured.length === 0) return [];
  return [
    'PostgreSQL per request during these runs (`pg_stat_wal`, `pg_statio_user_tables`, `pg_stat_user_tables`): blocks read are blocks not found in shared buffers (128 MB here), full-page images are the 8 KB page copies written to the WAL at the first change of a page after each checkpoint, HOT is the share of row updates that stayed on their page and added no index entries.',
    '',
    '| scenario | WAL bytes | full-page images | blocks read | blocks hit | HOT updates |',
    '|---|---:|---:|---:|---:|---:|',
    ...measured.map((row) => {
      const work = row.database!;
      return `| ${row.name} | ${n0(work.walBytes)} | ${work.fullPageImages.toFixed(2)} | ${work.blocksRead.toFixed(2)} | ${work.blocksHit.toFixed(1)} | ${(work.hotShare * 100).toFixed(0)} % |`;
    }),
    '',
  ];
}

/** Renders the report and writes it to docs/scenarios.md; returns the path. */
export function writeReport(report: Report): string {
  const { ceiling, ceilingFixed, jsonServer, memory } = report.peers;
  const s = report.settings;
  const out: string[] = [
    '# Benchmark scenarios',
    '',
    `Written by \`npm run bench:scenarios\` on ${report.started.toISOString()} (the run took ${Math.round((report.finished.getTime() - report.started.getTime()) / 60_000)} min). Do not edit by hand: run it again.`,
    '',
    s.quick ? '**Quick mode (BENCH_QUICK=1): a check of the harness, not figures to quote.**\n' : '',
    '## Machine and method',
    '',
    `- Machine: ${report.machine.cpu}, ${report.machine.memoryGiB} GiB; Node.js ${report.machine.node}; PostgreSQL ${report.machine.postgres ?? 'not available'} on the same machine.`,
    `- Load: autocannon in the benchmark process, on the same 2 cores as the server (so every figure is a lower bound and ratios within one run are what to compare). ${s.connections} connections; ${s.warmup} s warm-up, then ${s.runs} runs of ${s.duration} s per scenario; the tables show the medians.`,
    '- Every request of the service is authenticated (API key, or an app access token for create_or_update); rate limiting off (`RATE_LIMIT_PER_SECOND=0`); `LOG_LEVEL=warn` for the service and the ceiling alike (no log line per request); SQLite with `synchronous=FULL` (every acknowledged write durable).',
    `- Fixed-rate runs offer ${s.fixedRate} req/s over 10 connections: autocannon sends each connection's share of a second at the start of the second, so with 50 connections every second would begin with ${s.fixedRate} requests queued at once, for the ceiling as much as for the service.`,
    '- The ceiling and the peer are measured right before the SQLite WORKERS=1 scenarios they are compared with.',
    '- The ceiling: the same Fastify stack returning the same 50-rule page from memory through the same response schema, without storage or auth (`bench/ceiling.ts`). The peer: json-server 0.17.4 serving the same 50 rules from its own db.json.',
    "- The service can beat the ceiling: it keeps each earning-rules page serialised until the account's rules change, while the ceiling, as defined, serialises the page through the response schema on every request. On PostgreSQL the rules version and referral settings are kept in memory until a change notification (docs/decisions.md), so a cached page costs no database work; SQLite keeps them too until another connection commits (PRAGMA data_version).",
    '- Data: the base account has 5,100 rules (page 100 exists at limit 50) and 1,000 identities. The scale comparison runs against an account with 10,000 rules and 1,000,000 identities (and as many customers), and an "empty" one with 50 rules and 1,000 identities. create_or_update alternates creating a new identity (and customer) and updating an existing one.',
    '',
    "The service against this machine's real limits (wrk as the load generator, ceilings of Fastify",
    'sending the page pre-serialised and of the write routes’ own statements at one durable commit',
    'each, CPU per request) is in [benchmarks.md](benchmarks.md), written by `npm run bench`. This',
    'report adds what the data size, the number of processes and a peer change.',
    '',
    'Reproduce: `npm run bench:scenarios` (BENCH_DURATION, BENCH_RUNS, BENCH_WARMUP, BENCH_DATABASE_URL, BENCH_ENGINES change the defaults).',
    '',
    ...report.skipped.map((line) => `Skipped: ${line}.`),
    '',
    '## Targets',
    '',
    ...targets(report),
    '',
    '## Ceiling and peer (50 connections)',
    '',
    ...rowsTable([ceiling, jsonServer], ceiling, false),
    '',
  ];
  for (const engine of report.engines) {
    for (const [workers, result] of Object.entries(engine.workers)) {
      out.push(
        `## ${engine.engine}, WORKERS=${workers} (50 connections)`,
        '',
        ...rowsTable(result.rows, ceiling, true),
        '',
      );
      out.push(
        `Peak resident memory per process (MiB): ${result.memory.map((m) => m.toFixed(0)).join(', ')}${Number(workers) > 1 ? ' (the primary first, then the workers)' : ''}.`,
        '',
      );
    }
    if (engine.scale) {
      const empty = find(engine.scale, 'create_or_update, empty account');
      const large = find(engine.scale, 'create_or_update, 1M identities');
      const rulesEmpty = find(engine.scale, 'earning_rules first page, empty account');
      const rulesLarge = find(engine.scale, 'earning_rules first page, 10,000 rules');
      out.push(`## ${engine.engine}: scale (WORKERS=1)`, '', ...rowsTable(engine.scale, ceiling, false), '');
      if (empty && large && rulesEmpty && rulesLarge) {
        out.push(
          `Ratios: create_or_update with 1,000,000 identities / empty account = ${ratio(large.rps, empty.rps)}; earning-rules page with 10,000 rules / empty account = ${ratio(rulesLarge.rps, rulesEmpty.rps)}.`,
          '',
        );
      }
      out.push(...databaseWork(engine.scale));
    }
    if (engine.fixedRate) {
      out.push(
        `## ${engine.engine}: latency at a fixed ${s.fixedRate} req/s (WORKERS=1)`,
        '',
        ...rowsTable([...engine.fixedRate, ceilingFixed], ceiling, false),
        '',
      );
    }
  }
  out.push(
    '## Memory of the peers',
    '',
    ...Object.entries(memory).map(([name, mib]) => `- ${name}: ${mib.toFixed(0)} MiB peak resident`),
    '',
  );
  const file = fileURLToPath(new URL('../../docs/scenarios.md', import.meta.url));
  writeFileSync(file, `${out.join('\n').replace(/\n{3,}/g, '\n\n')}\n`);
  writeFileSync(file.replace(/\.md$/, '.json'), `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
