import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { type CompiledQuery, Kysely, type LogConfig, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { redactUrl } from '../config.js';
import { ChangeFeed, type Changes } from './change-feed.js';
import { nameStatements } from './postgres-statements.js';
import type { Database } from './schema.js';
import { SqliteChanges } from './sqlite-changes.js';
import { GroupCommitSqlite, SQLITE_BUSY_TIMEOUT_MS } from './sqlite-driver.js';
import type { WriteTurn } from './write-turns.js';

export type Dialect = 'sqlite' | 'postgres';

export interface DbOptions {
  /** SQLite `synchronous`: FULL survives power loss (default); NORMAL only process crashes. */
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  /** PostgreSQL pool size. */
  poolMax?: number;
  /** PostgreSQL: named (server-side prepared) statements (default true); see nameStatements. */
  preparedStatements?: boolean;
  /** SQLite with WORKERS=N: the turn to write, passed between the processes (see WriteTurn). */
  writeTurn?: WriteTurn;
  /** Hears every statement run through the Kysely handle, once it ran (the plan test collects them). */
  onQuery?: (query: CompiledQuery) => void;
}

/** Kysely's log option that hands each statement run to `onQuery`. */
function queryLog(options: DbOptions): { log?: LogConfig } {
  const { onQuery } = options;
  return onQuery ? { log: (event) => onQuery(event.query) } : {};
}

/** An open database: the Kysely handle, which engine it is, and how to close it. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: Dialect;
  /** A printable description of where the data lives (no password). */
  readonly location: string;
  /** Changes made by other processes: the ChangeFeed on PostgreSQL, SqliteChanges on SQLite. */
  readonly changes: Changes | null;
  /** On SQLite, its two connections and the commit group (see GroupCommitSqlite). */
  readonly sqlite?: GroupCommitSqlite;
  /**
   * Runs `read` on a connection of its own that sees one moment of the database however long it
   * reads (an export): PostgreSQL's REPEATABLE READ, READ ONLY; on SQLite a read transaction on a
   * read-only connection to the file, which writers go on beside (WAL). Nothing it does is written.
   */
  snapshot<T>(read: (db: Kysely<Database>) => Promise<T>): Promise<T>;
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
  const sqlite = new GroupCommitSqlite(file, options.sqliteSynchronous ?? 'FULL', options.writeTurn);
  const kysely = new Kysely<Database>({ dialect: sqlite.dialect(), ...queryLog(options) });
  return {
    kysely,
    dialect: 'sqlite',
    location: `sqlite:${file}`,
    changes: new SqliteChanges(sqlite.writer),
    sqlite,
    snapshot: async (read) => {
      // An in-memory database is its connection's own: read it as it is.
      if (memory) return read(kysely);
      const connection = new SqliteDatabase(file, { readonly: true });
      connection.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
      const reader = new Kysely<Database>({ dialect: new SqliteDialect({ database: connection }) });
      try {
        connection.exec('begin');
        // The snapshot is taken at the first read of the transaction.
        connection.prepare('select count(*) from sqlite_schema').get();
        return await read(reader);
      } finally {
        if (connection.inTransaction) connection.exec('rollback');
        await reader.destroy();
      }
    },
    close: () => kysely.destroy(),
  };
}

/**
 * Longest a query waits for a PostgreSQL connection, whether the pool is busy or the server
 * does not answer. pg waits forever by default, so with the database unreachable (a host that
 * drops packets) every request would hang; past this it fails as `503 unavailable`.
 */
export const POSTGRES_CONNECT_TIMEOUT_MS = 5000;

function openPostgres(url: string, options: DbOptions): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  if (options.preparedStatements !== false) nameStatements(pool);
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), ...queryLog(options) });
  const changes = new ChangeFeed(url);
  return {
    kysely,
    dialect: 'postgres',
    location: redactUrl(url),
    changes,
    snapshot: (read) =>
      kysely.connection().execute(async (connection) => {
        await sql`begin isolation level repeatable read read only`.execute(connection);
        try {
          return await read(connection);
        } finally {
          await sql`rollback`.execute(connection);
        }
      }),
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
