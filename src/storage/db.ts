import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresDialect,
  SqliteDialect,
  type SqliteDialectConfig,
  type SqliteDatabase as SqliteDialectDatabase,
  SqliteDriver,
  sql,
  type Transaction,
  type TransactionBuilder,
} from 'kysely';
import pg from 'pg';
import { redactUrl } from '../config.js';
import { ChangeFeed, type Changes } from './change-feed.js';
import type { Database } from './schema.js';
import { SqliteChanges } from './sqlite-changes.js';

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
  /** Changes made by other processes: the ChangeFeed on PostgreSQL, SqliteChanges on SQLite. */
  readonly changes: Changes | null;
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
  database.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  database.pragma('foreign_keys = ON');
  const dialect = new ImmediateSqliteDialect({ database: withStatementCache(database) }, database);
  const kysely = new SqliteKysely<Database>({ dialect });
  return {
    kysely,
    dialect: 'sqlite',
    location: `sqlite:${file}`,
    changes: new SqliteChanges(database),
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
    prepare: (sql: string) => {
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

/** How long a write waits for another process's write lock before failing (then `503 unavailable`). */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

/**
 * Kysely on SQLite, with transactions that begin IMMEDIATE and wait for another process's write
 * lock without stopping this one.
 *
 * Kysely opens a deferred BEGIN, which takes the write lock only at the first write: a
 * transaction that reads first (a balance, an earning limit) and then writes fails at once with
 * SQLITE_BUSY when another process wrote meanwhile. BEGIN IMMEDIATE takes the write lock first,
 * so what the transaction read stays true until it commits (every transaction here writes).
 *
 * better-sqlite3 waits for a lock by sleeping in its busy handler, which stops the whole process:
 * with WORKERS=2 each process stood still while the other held the lock, the event-loop delay
 * passed MAX_EVENT_LOOP_DELAY_MS, and up to a tenth of the requests were shed with 503. Here
 * BEGIN IMMEDIATE is tried without waiting; while another process holds the lock the transaction
 * gives its connection back and is tried again after a short pause (up to SQLITE_BUSY_TIMEOUT_MS
 * in all), so this process keeps answering, reads included, meanwhile. Statements outside a
 * transaction keep the blocking wait of busy_timeout.
 */
class SqliteKysely<DB> extends Kysely<DB> {
  override transaction(): TransactionBuilder<DB> {
    const builder = super.transaction();
    const execute = builder.execute.bind(builder);
    builder.execute = async <T>(callback: (trx: Transaction<DB>) => Promise<T>): Promise<T> => {
      const started = performance.now();
      for (let attempt = 0; ; attempt++) {
        try {
          return await execute(callback);
        } catch (error) {
          if (!(error instanceof WriteLockBusy) || performance.now() - started >= SQLITE_BUSY_TIMEOUT_MS) throw error;
        }
        // 1, 2, 4 … ms, at most 16, with jitter so that two processes do not retry in step.
        await new Promise((resolve) => setTimeout(resolve, Math.min(16, 2 ** attempt) * (0.5 + Math.random())));
      }
    };
    return builder;
  }
}

/** Another process holds the write lock: BEGIN IMMEDIATE failed without waiting, nothing ran. */
class WriteLockBusy extends Error {
  readonly code = 'SQLITE_BUSY';
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(
    private readonly settings: SqliteDialectConfig,
    private readonly database: SqliteDatabase.Database,
  ) {
    super(settings);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.settings, this.database);
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  constructor(
    settings: SqliteDialectConfig,
    private readonly database: SqliteDatabase.Database,
  ) {
    super(settings);
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    this.database.pragma('busy_timeout = 0');
    try {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_BUSY') {
        throw new WriteLockBusy('another process holds the database write lock', { cause: error });
      }
      throw error;
    } finally {
      this.database.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    }
  }
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
