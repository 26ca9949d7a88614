// `npm run bench`: the service against the real limits of this machine, measured in one run
// (issue 17). The load generator is wrk (C, one thread), and its CPU is reported. Ceilings, beside
// the service's own figures:
// - reads: bare node:http sending the page's bytes; Fastify sending the page pre-serialised with
//   the service's headers; Fastify serialising the page object with the route's schema;
// - writes: the route's exact statements, captured from a real request, replayed by
//   better-sqlite3 in a loop with one durable commit each (SQLite), or by pgbench as a custom
//   script at the same concurrency (PostgreSQL); on PostgreSQL also the Node floor (bench/floor.ts:
//   Fastify and pg running the same statements, nothing else).
// Server CPU per request (µs) for every scenario, and on PostgreSQL the database's too. Then the
// growth scenarios (./limits/growth.ts, issue 33): every engine route on a program after a year
// against an empty account (the writes to any customer also with their statements replayed alone
// on both, the database's own share), and a VIP tier change over a million customers while writes go on.
// Settings: BENCH_DURATION (s, default 8), BENCH_RUNS (3), BENCH_ENGINES ("sqlite,postgres"),
// BENCH_DATABASE_URL. Writes docs/benchmarks.md. BENCH_ONLY (comma-separated parts of scenario
// names, e.g. "purchases,WORKERS=2") runs only the scenarios it names, with their ceilings, and
// prints their figures without writing the report: for working on one of them.
// It installs nothing: wrk (Debian's `wrk`) and, for PostgreSQL, pgbench (Debian's `postgresql`)
// must be there, or it stops before starting and names them (./limits/tools.ts).
// The parts, in bench/limits/: settings, tools, cpu (CPU accounting from /proc), measure (wrk
// runs), capture (a write route's statements), service (the service's figures), ceilings, growth,
// report; the growth data is built (and kept between runs) by bench/growth-data.ts.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { captureWrites, hookDrivers } from './limits/capture.js';
import { nodeFloors, readCeilings, writeCeilings } from './limits/ceilings.js';
import { growthFigures } from './limits/growth.js';
import { type EngineReport, writeLimitsReport } from './limits/report.js';
import { serviceFigures } from './limits/service.js';
import { DATA, ENGINES, log, ONLY } from './limits/settings.js';
import { missingTools } from './limits/tools.js';
import { PG_URL, postgresAnswers } from './processes.js';
import { prepare } from './write-scenarios.js';

/** One engine: the data, the routes' statements, the service's figures, then the write ceilings and floors. */
async function benchEngine(engine: 'sqlite' | 'postgres'): Promise<EngineReport> {
  log(`\n== ${engine}: seeding`);
  const { url, setup } = await prepare(engine, DATA, log);
  const captured = await captureWrites(url, setup);
  const { reads, writes, withEndpoint, deliveries } = await serviceFigures(engine, url, setup);
  const writeCeilingRows = await writeCeilings(engine, url, captured);
  const writeFloors = engine === 'postgres' ? await nodeFloors(url, setup, captured) : [];
  const growth = await growthFigures(engine);
  return { engine, reads, writes, writeCeilings: writeCeilingRows, writeFloors, withEndpoint, deliveries, growth };
}

async function main(): Promise<void> {
  const started = new Date();
  const missing = missingTools(ENGINES.includes('postgres') && (await postgresAnswers()));
  if (missing.length > 0) {
    for (const line of missing) process.stderr.write(`npm run bench: ${line}\n`);
    process.exitCode = 1;
    return;
  }
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  hookDrivers();
  const engines: EngineReport[] = [];
  for (const engine of ENGINES) {
    if (engine === 'postgres' && !(await postgresAnswers())) {
      log(`PostgreSQL skipped: nothing answers at ${PG_URL}`);
      continue;
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
