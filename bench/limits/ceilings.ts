// The limits the service is held against, measured in the same run:
// - reads: bench/ceilings.ts (bare node:http, Fastify pre-serialised, batched or serialising)
//   sending the page the service answered, loaded by wrk as the service is;
// - writes: the routes' recorded statements (./capture.ts) replayed with one durable commit each,
//   by better-sqlite3 in a loop (SQLite) or by pgbench at the same concurrency (PostgreSQL);
// - the Node floor (PostgreSQL): bench/floor.ts running those statements from a bare route.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { startProcess, stopChild } from '../processes.js';
import {
  BENCH_SCOPE,
  CODE,
  EVENT_ID,
  MARK,
  REFERRAL_CODE,
  remember,
  type Scope,
  type Statement,
  vary,
} from '../replay.js';
import { SEEDED_DISTINCT_ID } from '../seed.js';
import { CUSTOMER_ID_BASE, type Setup, writeScenarios } from '../write-scenarios.js';
import { postgresTicks, TICK_US } from './cpu.js';
import { measure, median, present, type Row, settle } from './measure.js';
import { CONNECTIONS, DATA, DURATION, log, RUNS, wanted } from './settings.js';

/** A write route's ceiling: commits (SQLite) or pgbench transactions (PostgreSQL) per second. */
export interface WriteCeiling {
  name: string;
  rps: number;
  /** pgbench's mean latency, ms. */
  latency?: number;
  /** PostgreSQL's CPU per transaction, µs. */
  databaseUs?: number;
}

/** What the name of a write scenario's floor row adds to the scenario's name. */
export const FLOOR = ', Node floor';

/** The read ceilings: bench/ceilings.ts in each of its modes, serving the page and headers recorded. */
export async function readCeilings(pageFile: string, headersFile: string): Promise<Row[]> {
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

/** Each recorded write route replayed on `engine` at `url`: better-sqlite3's commits or pgbench's transactions. */
export async function writeCeilings(
  engine: 'sqlite' | 'postgres',
  url: string,
  captured: Map<string, Statement[][]>,
): Promise<WriteCeiling[]> {
  log(`== ${engine}: write ceilings (the routes' statements, one durable commit each)`);
  const ceilings: WriteCeiling[] = [];
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
      ceilings.push({ name, rps });
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
      ceilings.push({ name, rps, latency, databaseUs });
    }
  }
  return ceilings;
}

/** bench/floor.ts on each write route's recorded statements, loaded as the service was. */
export async function nodeFloors(url: string, setup: Setup, captured: Map<string, Statement[][]>): Promise<Row[]> {
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

/**
 * better-sqlite3 running the sequences in a loop, one durable commit each: commits per second.
 * Each sequence (the request's reads before its transaction too) runs in one BEGIN IMMEDIATE …
 * COMMIT: the service's savepoints and group commits are its own, not the disk's.
 */
export function sqliteCeiling(
  file: string,
  sequences: Statement[][],
  seconds: number,
  round: number,
  scope: Scope = BENCH_SCOPE,
): number {
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
      const params = vary(statement.params, round * 10_000_000 + done, ids, scope) as unknown[];
      let result = run?.apply(statement.prepared, params);
      if (statement.method === 'iterate') result = [...(result as Iterable<unknown>)];
      remember(statement, result, ids, scope);
    }
    commit.run();
    done++;
  }
  const elapsed = (performance.now() - started) / 1000;
  db.close();
  return done / elapsed;
}

/** A pgbench script of the sequences: parameters written in, MARK varied by a random number. */
export function pgbenchScript(sequences: Statement[][], scope: Scope = BENCH_SCOPE): string {
  const literal = (value: unknown): string => {
    if (value === null || value === undefined) return 'null';
    if (typeof value === 'number' && scope.isCustomer(value)) return ':c';
    if (typeof value === 'number' || typeof value === 'bigint') return String(value);
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    const text = String(value);
    if (CODE.test(text)) return `upper(substr(md5(random()::text), 1, 16))`;
    if (EVENT_ID.test(text)) return `'evt_' || md5(random()::text)`;
    if (REFERRAL_CODE.test(text)) return `substr(md5(random()::text), 1, 12)`;
    // The seeded identity of the script's customer :c (see identityOf).
    const identity = SEEDED_DISTINCT_ID.exec(text);
    if (identity) return `'a${identity[1]}-' || (:c - ${CUSTOMER_ID_BASE})`;
    // A colon before a name or digits (`127.0.0.1:3000` in a referral URL) is a variable to
    // pgbench, even inside a string: it is spelled chr(58) there.
    const quoted = text.replaceAll("'", "''").replace(/:(?=[0-9A-Za-z_])/g, "' || chr(58) || '");
    return `'${quoted.replaceAll(MARK, "' || :n || '")}'`;
  };
  const lines = ['\\set n random(1, 1000000000000000)', `\\set c random(${scope.first}, ${scope.last})`];
  // An id a statement returned is kept with \gset and used where later statements had it.
  const render = (sequence: Statement[], seq: number) => {
    const variables = new Map<number, string>();
    return sequence.map((statement, index) => {
      // One pass over the statement's own placeholders: a value written in (an event's data with
      // "$5 off coupon") is never read again as a placeholder.
      const text = statement.sql.replace(/\s+/g, ' ').replace(/\$(\d+)/g, (placeholder, digits: string) => {
        const i = Number(digits);
        if (i < 1 || i > statement.params.length) return placeholder;
        const value = statement.params[i - 1];
        const variable = typeof value === 'number' ? variables.get(value) : undefined;
        return variable ?? literal(value);
      });
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
export function postgresCeiling(
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
