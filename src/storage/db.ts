import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase as SqliteDialectDatabase, sql } from 'kysely';
import pg from 'pg';
import { redactUrl } from '../config.js';
import { ChangeFeed } from './change-feed.js';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface DbOptions {
  /** SQLite `synchronous`: FULL survives power loss (default); NORMAL only process crashes. */
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  /** PostgreSQL pool size. */
  poolMax?: number;
}

/** An open database: the Kysely handle, which engine it is, and how to close it. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: Dialect;
  /** A printable description of where the data lives (no password). */
  readonly location: string;
  /** Changes made by any process, on PostgreSQL; null on SQLite (see ChangeFeed). */
  readonly changes: ChangeFeed | null;
  close(): Promise<void>;
}

// PostgreSQL returns int8 (bigserial ids, epoch-ms times) as strings; ids stay far below 2^53,
// so they are parsed to numbers and serialised as JSON integers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/** Opens the database named by a `sqlite:` or `postgres://` URL. */
export function openDb(url: string, options: DbOptions = {}): Db {
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options);
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    return openPostgres(url, options);
  }
  throw new Error(`Unsupported DATABASE_URL "${redactUrl(url)}": use sqlite:PATH or postgres://…`);
}

function openSqlite(path: string, options: DbOptions): Db {
  const memory = path === ':memory:' || path === '';
  const file = memory ? ':memory:' : resolve(path.replace(/^\/\/(?=\/)/, ''));
  if (!memory) mkdirSync(dirname(file), { recursive: true });
  const database = new SqliteDatabase(file);
  // WAL lets readers run beside the one writer (and beside other processes on the same file);
  // synchronous=FULL makes an acknowledged commit durable across power loss.
  database.pragma('journal_mode = WAL');
  database.pragma(`synchronous = ${options.sqliteSynchronous ?? 'FULL'}`);
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) });
  return {
    kysely,
    dialect: 'sqlite',
    location: `sqlite:${file}`,
    changes: null,
    close: () => kysely.destroy(),
  };
}

/**
 * Longest a query waits for a PostgreSQL connection, whether the pool is busy or the server
 * does not answer. pg waits forever by default, so with the database unreachable (a host that
 * drops packets) every request would hang; past this it fails as `503 unavailable`.
 */
export const POSTGRES_CONNECT_TIMEOUT_MS = 5000;

/** Prepared statements kept per database: the SQL of the hot queries is a handful of strings. */
const STATEMENT_CACHE_ENTRIES = 500;

/**
 * Kysely prepares every query afresh, and preparing costs SQLite more than running a primary-key
 * lookup. Kysely's queries carry their values as parameters, so the same SQL text recurs and its
 * statement can be reused (better-sqlite3 statements are reusable; Kysely runs one query at a
 * time on its single connection). Bounded, since bulk inserts of varying sizes make new SQL.
 */
function withStatementCache(database: SqliteDatabase.Database): SqliteDialectDatabase {
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => database.close(),
    prepare: (text: string) => {
      // Kysely opens every transaction with a deferred BEGIN, which takes the write lock only at
      // the first write: a transaction that reads first (a balance, an earning limit) and then
      // writes fails at once with SQLITE_BUSY when another process wrote meanwhile, without
      // waiting out busy_timeout. BEGIN IMMEDIATE takes the write lock first, waiting for it, so
      // what the transaction read stays true until it commits. Every transaction here writes.
      const sql = text === 'begin' ? 'begin immediate' : text;
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = database.prepare(sql);
        if (statements.size >= STATEMENT_CACHE_ENTRIES) statements.clear();
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

function openPostgres(url: string, options: DbOptions): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const changes = new ChangeFeed(url);
  return {
    kysely,
    dialect: 'postgres',
    location: redactUrl(url),
    changes,
    close: async () => {
      await changes.close();
      await kysely.destroy();
    },
  };
}

/** True when the database answers a trivial query. */
export async function isReachable(db: Db): Promise<boolean> {
  try {
    await sql`select 1`.execute(db.kysely);
    return true;
  } catch {
    return false;
  }
}
