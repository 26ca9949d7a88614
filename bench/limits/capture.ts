// The statements one request of each write route runs, recorded from the app itself (in this
// process) at the drivers, for the write ceilings and the Node floor to replay.
import SqliteDatabase from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDb } from '../../src/storage/db.js';
import { idsOf, MARK, type Statement } from '../replay.js';
import { ID_BASE, type Setup, writeScenarios } from '../write-scenarios.js';

let recording: Statement[] | null = null;
/** The smallest id a recorded statement's result counts as a row the request made (Scope.idFloor). */
let idFloor = ID_BASE;

/** Records every statement better-sqlite3 runs while `recording` is set. */
function recordSqlite(): void {
  const proto = SqliteDatabase.prototype as unknown as {
    prepare: (this: unknown, sql: string) => Record<string, unknown>;
  };
  const prepareStatement = proto.prepare;
  proto.prepare = function (this: unknown, text: string) {
    const statement = prepareStatement.call(this, text);
    for (const method of ['run', 'all', 'get', 'iterate']) {
      const original = statement[method] as (...args: unknown[]) => unknown;
      statement[method] = function (this: unknown, ...args: unknown[]) {
        const result = original.apply(this, args);
        if (recording) {
          const returned = method === 'all' || method === 'get' ? idsOf(asObjects(statement, result), idFloor) : [];
          recording.push({ sql: text, method, params: args, ...(returned.length ? { returned } : {}) });
        }
        return result;
      };
    }
    return statement;
  };
}

/** Rows as objects: the service's driver reads in raw mode (arrays, src/storage/sqlite-driver.ts). */
function asObjects(statement: Record<string, unknown>, result: unknown): unknown {
  if (!Array.isArray(result) || !Array.isArray(result[0])) return result;
  const names = (statement.columns as () => { name: string }[]).call(statement).map((column) => column.name);
  return (result as unknown[][]).map((values) => Object.fromEntries(names.map((name, i) => [name, values[i]])));
}

/** Records every query the pg client sends while `recording` is set. */
function recordPostgres(): void {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const result = query.apply(this, args);
    // Kysely's text and values, or the named statement the service makes of them.
    const named = typeof args[0] === 'object' ? (args[0] as { text?: string; values?: unknown[] } | null) : null;
    const text = typeof args[0] === 'string' ? args[0] : named?.text;
    if (recording && text !== undefined) {
      const params = named ? named.values : (args[1] as unknown[] | undefined);
      const statement: Statement = { sql: text, method: 'query', params: params ?? [] };
      recording.push(statement);
      void (result as Promise<{ rows: unknown[] }>).then(
        ({ rows }) => {
          const returned = idsOf(rows, idFloor);
          if (returned.length) statement.returned = returned;
        },
        () => undefined,
      );
    }
    return result;
  };
}

/**
 * Hooks both drivers of this process, once, before any database is opened: they record only
 * while captureWrites asks them to.
 */
export function hookDrivers(): void {
  recordSqlite();
  recordPostgres();
}

/** The app itself on `url`, in this process (its statements recorded while `record` asks), for `use`; closed after. */
export async function withApp<T>(url: string, use: (app: FastifyInstance) => Promise<T>): Promise<T> {
  const db = openDb(url, { poolMax: 2 });
  const app = await buildApp({
    config: loadConfig({ RATE_LIMIT_PER_SECOND: '0', AUTH_FAILURES_PER_MINUTE: '0', LOG_LEVEL: 'silent' }),
    db,
    logger: false,
  });
  try {
    await app.ready();
    return await use(app);
  } finally {
    recording = null;
    await app.close();
    await db.close();
  }
}

/** A write to the app in this process with `token`, `body` as JSON. */
export const postAs = (app: FastifyInstance, path: string, token: string, body: unknown) =>
  app.inject({
    method: 'POST',
    url: path,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });

/** The statements `send` runs, recorded (ids from `floor` up returned: Scope.idFloor); `name` says whose they are when it fails. */
export async function record(
  name: string,
  send: () => Promise<{ statusCode: number; body: string }>,
  floor = ID_BASE,
): Promise<Statement[]> {
  recording = [];
  idFloor = floor;
  const statements = recording;
  const answer = await send().finally(() => {
    recording = null;
  });
  if (answer.statusCode >= 300) throw new Error(`${name}: ${answer.statusCode} ${answer.body}`);
  return statements;
}

/**
 * The statements one request of each write route runs, taken from the app itself on `url`
 * (in this process): warm-up requests first (caches filled and the customer's bonuses used up, as
 * in a steady run), then the one recorded. Unique values of the recorded request hold MARK, for the replay to vary.
 */
export function captureWrites(url: string, setup: Setup): Promise<Map<string, Statement[][]>> {
  return withApp(url, async (app) => {
    const captured = new Map<string, Statement[][]>();
    for (const scenario of writeScenarios(setup)) {
      const send = (n: number, unique: string) => postAs(app, scenario.path, scenario.token, scenario.body(n, unique));
      const sequences: Statement[][] = [];
      // create_or_update alternates a new identity and an update: both are replayed in turn.
      for (const n of scenario.name.startsWith('create_or_update') ? [0, 1] : [0]) {
        // The warm-ups are for the same customer, so that the recorded request is one of the load's
        // steady state, not the first of its kind: an order after the day's bonuses (the seed's
        // "Order bonus" earns at most 3 times a day), as every customer has after a few orders.
        for (let warmup = 0; warmup < 4; warmup++) await send(n, `warm-${n}-${warmup}`);
        sequences.push(await record(scenario.name, () => send(n, MARK)));
      }
      captured.set(scenario.name, sequences);
    }
    return captured;
  });
}
