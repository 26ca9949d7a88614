// docs/benchmarks.md from one run of `npm run bench`: the read ceilings, each engine's reads and
// writes against their ceilings and issue 17's targets, the Node floor; nothing typed by hand.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../processes.js';
import { FLOOR, type WriteCeiling } from './ceilings.js';
import type { GrowthReport } from './growth.js';
import type { Row } from './measure.js';
import { CONNECTIONS, DURATION, RUNS, WARMUP } from './settings.js';
import { type DeliveryFigures, WITH_ENDPOINT } from './webhooks.js';

/** What one engine measured. */
export interface EngineReport {
  engine: string;
  reads: Row[];
  writes: Row[];
  writeCeilings: WriteCeiling[];
  /** PostgreSQL: bench/floor.ts running each route's statements (see there). */
  writeFloors: Row[];
  /** The write routes again with one webhook endpoint subscribed to every event (bench/limits/webhooks.ts). */
  withEndpoint: Row[];
  deliveries: DeliveryFigures[];
  /** The program after a year against an empty one (bench/limits/growth.ts). */
  growth?: GrowthReport;
}

/** Issue 33's targets: each route on the large account at this share of the empty one's throughput, reads within the p99, a tier change holding writes back at most this long. */
const GROWTH_RATIO = 0.8;
const GROWTH_P99_MS = 50;
const TIER_CHANGE_MAX_MS = 100;

/** The growth scenarios: each route on both accounts, and the tier change. */
function growthTable(growth: GrowthReport | undefined, fixed: (value: number, digits?: number) => string): string[] {
  if (!growth || (growth.rows.length === 0 && !growth.tierChange)) return [];
  const out = [
    '### Growth: a program after a year (issue 33)',
    '',
    'One server, two accounts of one database, each route measured on both in turn (1 s warm-up, 3 runs of 4 s, ' +
      'medians): an empty account (50 rules, 100 customers with 10 ledger entries each, one of them also with 100 orders on the ' +
      'same rules so that their ledger fills a page, 100 reward codes so that they fill one too) and a large one ' +
      '(10,000 rules; 1,000,000 customers with an identity and 10 ledger entries each; 100,000 reward codes; one customer ' +
      'with 100,000 orders, each credited by “Order” and the first three a day by “Order bonus”, a rolling limit of 3 a ' +
      'day). An order for any customer is dated to be its customer’s first of a day on both accounts (`created_on_origin_at` ' +
      'a day back for every pass over the customers), so that both rules credit it on each: undated, the empty account’s ' +
      '100 customers would use up their bonuses within a few hundred orders and compare one credit with two. ' +
      '`updated_at_min` is chosen to match no row, the newest row only, or every row. The reads run before the ' +
      'writes. Max is the slowest request of the three runs. At 50 connections the server is saturated and a request ' +
      'also waits behind the 49 others (its latency is about 50 times its own time, whatever the data size), so a ' +
      "read's p99 target is checked on the large account over one connection (3 s): the request's own time. " +
      'For the writes to any customer, “statements alone” is the database’s own share: the statements of one ' +
      'request, recorded on each account, replayed with one durable commit each (better-sqlite3 in a loop, or ' +
      'pgbench at 50 connections) over the account’s customers, large against empty.',
    '',
    '| route | empty req/s | large req/s | ratio | large p50 ms | large p99 ms | large max ms | large p99 ms, 1 connection | statements alone: empty → large /s (ratio) | target |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...growth.rows.map((row) => {
      const ratio = row.large.rps / Math.max(1, row.empty.rps);
      const p99 = row.alone ? `, ${met(row.alone.p99 <= GROWTH_P99_MS)} p99 ≤ ${GROWTH_P99_MS} ms` : '';
      const alone = row.alone ? fixed(row.alone.p99, 2) : '';
      const db = row.database;
      const statements = db
        ? `${fixed(db.empty)} → ${fixed(db.large)} (${fixed(db.large / Math.max(1, db.empty), 2)})`
        : '';
      return `| ${row.name} | ${fixed(row.empty.rps)} | ${fixed(row.large.rps)} | ${fixed(ratio, 2)} | ${fixed(row.large.p50, 1)} | ${fixed(row.large.p99, 1)} | ${fixed(row.large.max)} | ${alone} | ${statements} | ${met(ratio >= GROWTH_RATIO)} ratio ≥ ${GROWTH_RATIO}${p99} |`;
    }),
  ];
  const change = growth.tierChange;
  if (change) {
    out.push(
      '',
      `**A tier change over 1,000,000 customers.** \`loyalty vip-tiers create --name Bronze --milestone 1000\` on the large ` +
        `account (between Silver at 500 and Gold at 2,000) while wrk posts points transactions for its customers over ` +
        `10 connections: “${change.progress}” in ${fixed(change.seconds, 1)} s, with ${change.progressLines} progress ` +
        `lines. The writes before it: ${fixed(change.before.rps)} req/s, p99 ${fixed(change.before.p99, 1)} ms, max ` +
        `${fixed(change.before.max)} ms; during it (${change.during.slices} slices of 2 s, the worst): p99 ` +
        `${fixed(change.during.p99, 1)} ms, max ${fixed(change.during.max)} ms, ${fixed(change.during.rps)} req/s on ` +
        `average. ${met(change.during.max <= TIER_CHANGE_MAX_MS)} no write held back more than ${TIER_CHANGE_MAX_MS} ms.`,
    );
  }
  const failures = growth.rows.filter((row) => row.empty.failures + row.large.failures > 0);
  if (failures.length > 0) {
    out.push(
      '',
      `Failures (errors or non-2xx): ${failures.map((r) => `${r.name} ${r.empty.failures} + ${r.large.failures}`).join('; ')}.`,
    );
  }
  return out;
}

/** The events contract's bar: writes with one endpoint at this share of their throughput without. */
const WEBHOOK_TARGET = 0.85;

/** The write routes with one webhook endpoint, against themselves without one, and the deliveries meanwhile. */
function webhookTable(engine: EngineReport, fixed: (value: number, digits?: number) => string): string[] {
  if (engine.withEndpoint.length === 0) return [];
  return [
    '### Writes with one webhook endpoint (issue 29)',
    '',
    'Each write route again, on the same server, after an endpoint subscribed to every event was added, pointing at a ' +
      'receiver in the benchmark process that answers 204 at once (it shares the cores). Deliveries per second are ' +
      'the receiver’s over the warm-up and the runs; the oldest pending delivery’s age and the backlog are sampled every ' +
      'second from the jobs table; “drained” is how long the backlog took to empty once the load stopped.',
    '',
    '| scenario | without req/s | with req/s | ratio | target | deliveries/s | oldest pending, max s | pending first → last | drained in s |',
    '|---|---:|---:|---:|---|---:|---:|---:|---:|',
    ...engine.withEndpoint.map((row) => {
      const scenario = row.name.slice(0, -WITH_ENDPOINT.length);
      const without = engine.writes.find((w) => w.name === scenario)?.rps ?? 0;
      const ratio = without > 0 ? row.rps / without : 0;
      const d = engine.deliveries.find((x) => x.scenario === scenario);
      return `| POST ${scenario} | ${fixed(without)} | ${fixed(row.rps)} | ${fixed(ratio, 2)} | ${met(ratio >= WEBHOOK_TARGET)} ≥ ${WEBHOOK_TARGET} | ${fixed(d?.perSecond ?? 0)} | ${fixed(d?.oldestMaxS ?? 0, 1)} | ${d?.pendingFirst ?? 0} → ${d?.pendingLast ?? 0} | ${d?.drainS === null || d?.drainS === undefined ? 'not in 120' : fixed(d.drainS, 1)} |`;
    }),
  ];
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

/** The report of one run: its engines' figures and the read ceilings, as markdown. */
export function renderLimitsReport(started: Date, engines: EngineReport[], ceilings: Row[]): string {
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
    const hooks = webhookTable(engine, fixed);
    if (hooks.length > 0) out.push('', ...hooks);
    const growth = growthTable(engine.growth, fixed);
    if (growth.length > 0) out.push('', ...growth);
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
    const failures = [...engine.reads, ...engine.writes, ...engine.withEndpoint].filter((row) => row.failures > 0);
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
  return out.join('\n');
}

/** Writes the report to docs/benchmarks.md; returns the path. */
export function writeLimitsReport(started: Date, engines: EngineReport[], ceilings: Row[]): string {
  const file = join(ROOT, 'docs', 'benchmarks.md');
  const before = existsSync(file) ? previousTables(readFileSync(file, 'utf8')) : [];
  writeFileSync(file, `${renderLimitsReport(started, engines, ceilings)}${before.join('\n')}`);
  return file;
}

/**
 * The figures of the report a run replaces (its header and tables, without its own "before" or
 * the explanations), one heading level down under "Before": each report shows the one it follows.
 */
function previousTables(text: string): string[] {
  const figures = text.split(`\n${BEFORE_HEADING}`)[0]!.split('\n## How the ceilings are made')[0]!;
  const lines = figures.split('\n').slice(1).join('\n').trim().split('\n');
  return ['', BEFORE_HEADING, '', ...lines.map((line) => (line.startsWith('#') ? `#${line}` : line)), ''];
}

const BEFORE_HEADING = '## Before: the report this run replaced';
