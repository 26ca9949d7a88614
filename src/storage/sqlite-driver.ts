import SqliteDatabase from 'better-sqlite3';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { WriteTurn } from './write-turns.js';

/** How long a write waits for another process's write lock before failing (then `503 unavailable`). */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

/** Prepared statements kept per connection: the SQL of the hot queries is a handful of strings. */
const STATEMENT_CACHE_ENTRIES = 500;

/**
 * Kysely over better-sqlite3 with group commit: transactions that finish together share one
 * durable COMMIT (one fsync with synchronous=FULL) instead of paying one each.
 *
 * Two connections to the file. The writer holds the open group: one `BEGIN IMMEDIATE`, then each
 * Kysely transaction in turn inside a SAVEPOINT of its own, so that a transaction that fails
 * rolls back only its own work. A finished transaction is not yet acknowledged: its `execute()`
 * resolves only after the group's COMMIT returned, so an answer is never sent for work a crash
 * could still lose. The COMMIT runs once the event loop has taken every request that arrived
 * meanwhile (setImmediate): under load a group holds every write of one turn of the loop, idle it
 * holds one and costs one turn of the loop in latency.
 *
 * The reader serves statements that run outside a transaction and only read (better-sqlite3's
 * `statement.readonly`): in WAL mode it sees only committed data, never the open group's, so a
 * read never shows what a failed COMMIT would take back. A write outside a transaction joins the
 * group as a transaction of one statement.
 *
 * A transaction that rolls back still waits for the group it was in to commit: whatever it saw
 * of the transactions before it is then committed, so what its caller reads next (for instance
 * the earlier request behind a duplicate) is there to be read; when that COMMIT fails, it fails
 * with GroupRolledBack rather than its own reason, which rested on work that never existed.
 */
export class GroupCommitSqlite {
  readonly writer: SqliteDatabase.Database;
  private readonly reader: SqliteDatabase.Database;
  private readonly writerStatements: StatementCache;
  private readonly readerStatements: StatementCache;
  private readonly turn = new FifoLock();
  private group: Group | null = null;
  private flushScheduled = false;
  private closed = false;
  /** Durable COMMITs so far, and the transactions they committed (for the metrics). */
  readonly stats = { commits: 0, transactions: 0 };

  /**
   * @param writeTurn with WORKERS=N, the turn the processes pass between them (see WriteTurn):
   *   taken before a group begins, given back when it ends.
   */
  constructor(
    file: string,
    synchronous: 'FULL' | 'NORMAL',
    private readonly writeTurn?: WriteTurn,
  ) {
    this.writer = open(file, synchronous);
    // An in-memory database is one connection's own: reads then share the writer and its turn.
    this.reader = file === ':memory:' ? this.writer : open(file, synchronous);
    this.writerStatements = new StatementCache(this.writer);
    this.readerStatements = this.reader === this.writer ? this.writerStatements : new StatementCache(this.reader);
  }

  /** A Kysely dialect over these connections. */
  dialect(): Dialect {
    return {
      createAdapter: (): DialectAdapter => new SqliteAdapter(),
      createDriver: (): Driver => new GroupCommitDriver(this),
      createQueryCompiler: (): QueryCompiler => new SqliteQueryCompiler(),
      createIntrospector: (db: Kysely<unknown>): DatabaseIntrospector => new SqliteIntrospector(db),
    };
  }

  /** Runs a statement outside any transaction: a read on the reader, a write as a group of its own. */
  async execute(query: CompiledQuery): Promise<QueryResult<unknown>> {
    if (this.reader !== this.writer) {
      // SQLite says whether the statement only reads (prepared on the reader, kept there).
      const prepared = this.readerStatements.get(query.sql);
      if (prepared.statement.readonly) return run(prepared, query.parameters);
    }
    return this.keep(await this.enter(), () => run(this.writerStatements.get(query.sql), query.parameters));
  }

  /** Runs a statement of the transaction that holds the turn. */
  executeInTransaction(query: CompiledQuery): QueryResult<unknown> {
    // SQLite may have rolled the whole group back (a full disk): the statement must not then run
    // on its own, committed at once, outside the transaction it belongs to.
    if (!this.writer.inTransaction) throw new GroupRolledBack(new Error('no transaction is open'));
    return run(this.writerStatements.get(query.sql), query.parameters);
  }

  /** Takes the turn and opens a savepoint in the group (opening the group first when none is). */
  async begin(): Promise<Group> {
    const group = await this.enter();
    try {
      this.writer.exec('savepoint member');
    } catch (error) {
      this.leaveAfterFailure(group, error);
      throw error;
    }
    return group;
  }

  /** Keeps the transaction's work in the group; resolves once the group is durably committed. */
  async commit(group: Group): Promise<void> {
    await this.keep(group, () => {
      try {
        this.writer.exec('release member');
      } catch (error) {
        // Its work must not stay in the group to be committed with the others.
        if (this.writer.inTransaction) this.undoMember();
        throw error;
      }
    });
  }

  /**
   * Runs the last step of a member of `group` (its statement, or its savepoint's release), then
   * gives the turn on and resolves once the group is durably committed; when the step fails, once
   * the group has settled.
   */
  private async keep<T>(group: Group, step: () => T): Promise<T> {
    let result: T;
    try {
      result = step();
    } catch (error) {
      if (!this.leaveAfterFailure(group, error)) await settledCommitted(group);
      throw error;
    }
    group.members++;
    this.leave();
    await group.committed;
    return result;
  }

  /**
   * Undoes the transaction's own work; resolves once the rest of its group has committed. When
   * the group failed instead, what the transaction saw of it never existed: it fails with
   * GroupRolledBack (a retry is evaluated anew) rather than with its own reason.
   */
  async rollback(group: Group, cause: unknown = new Error('rolled back')): Promise<void> {
    let endedGroup = false;
    try {
      if (this.writer.inTransaction) this.undoMember();
    } finally {
      endedGroup = this.leaveAfterFailure(group, cause);
    }
    if (!endedGroup) await settledCommitted(group);
  }

  private undoMember(): void {
    this.writer.exec('rollback to member; release member');
  }

  /**
   * Runs `work` with the writer to itself: the open group committed first, no other transaction
   * of this process meanwhile. For work that manages its own transaction (the migrations).
   */
  async alone<T>(work: (database: SqliteDatabase.Database) => Promise<T>): Promise<T> {
    await this.turn.acquire();
    try {
      this.commitGroup();
      return await work(this.writer);
    } finally {
      this.turn.release();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.turn.acquire();
    try {
      this.commitGroup();
    } finally {
      this.turn.release();
      if (this.reader !== this.writer) this.reader.close();
      this.writer.close();
    }
  }

  /** Waits for the turn; opens a group when none is open. */
  private async enter(): Promise<Group> {
    if (this.closed) throw new Error('the database is closed');
    await this.turn.acquire();
    try {
      // The other thread of this process waits to write: the open group commits now rather than
      // at the end of this turn of the event loop, so that it waits for one transaction, not for
      // every request this turn takes.
      if (this.group !== null && this.writeTurn?.wanted?.()) this.commitGroup();
      if (this.group === null) {
        await this.writeTurn?.acquire();
        try {
          await this.beginImmediate();
        } catch (error) {
          this.writeTurn?.release();
          throw error;
        }
        this.group = new Group();
      }
      return this.group;
    } catch (error) {
      this.turn.release();
      throw error;
    }
  }

  /**
   * Gives the turn on; the group is committed once the event loop has taken what arrived
   * meanwhile, or at once when the other thread of this process waits to write.
   */
  private leave(): void {
    this.turn.release();
    if (this.writeTurn?.wanted?.()) {
      void this.flush();
      return;
    }
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      void this.flush();
    });
  }

  /**
   * As `leave`, after a failure: when SQLite rolled the whole group back, its members fail too,
   * and true is returned (this failure ended the group).
   */
  private leaveAfterFailure(group: Group, cause: unknown): boolean {
    const ended = this.group === group && !this.writer.inTransaction;
    if (ended) {
      this.endGroup();
      group.fail(new GroupRolledBack(cause));
    }
    this.leave();
    return ended;
  }

  private async flush(): Promise<void> {
    await this.turn.acquire();
    try {
      this.commitGroup();
    } finally {
      this.turn.release();
    }
  }

  /** Commits the open group (the caller holds the turn). */
  private commitGroup(): void {
    const group = this.group;
    if (group === null) return;
    try {
      this.writer.exec('commit');
      this.stats.commits++;
      this.stats.transactions += group.members;
      group.succeed();
    } catch (error) {
      group.fail(error);
      try {
        if (this.writer.inTransaction) this.writer.exec('rollback');
      } catch {
        // The connection is failing: the next BEGIN IMMEDIATE fails too, and says why.
      }
    } finally {
      this.endGroup();
    }
  }

  private endGroup(): void {
    this.group = null;
    this.writeTurn?.release();
  }

  /**
   * BEGIN IMMEDIATE takes the write lock first, so what a transaction reads stays true until it
   * commits. better-sqlite3 would wait for another process's lock by sleeping in its busy
   * handler, which stops the whole process: here it is tried without waiting and, while another
   * process holds the lock, again after a short pause (up to SQLITE_BUSY_TIMEOUT_MS in all), so
   * this process keeps answering, reads included, meanwhile.
   */
  private async beginImmediate(): Promise<void> {
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      this.writer.pragma('busy_timeout = 0');
      try {
        this.writer.exec('begin immediate');
        return;
      } catch (error) {
        const busy = (error as { code?: string }).code === 'SQLITE_BUSY';
        if (!busy) throw error;
        if (performance.now() - started >= SQLITE_BUSY_TIMEOUT_MS) {
          throw new WriteLockBusy('another process holds the database write lock', { cause: error });
        }
      } finally {
        this.writer.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
      }
      // 1, 2, 4 … ms, at most 16, with jitter so that two processes do not retry in step.
      await new Promise((resolve) => setTimeout(resolve, Math.min(16, 2 ** attempt) * (0.5 + Math.random())));
    }
  }
}

/** Rows of each index an ANALYZE reads (SQLite's advice for `pragma optimize`: a few hundred to a few thousand). */
const ANALYSIS_LIMIT = 1000;

function open(file: string, synchronous: 'FULL' | 'NORMAL'): SqliteDatabase.Database {
  const database = new SqliteDatabase(file);
  // WAL lets readers run beside the one writer (and beside other processes on the same file);
  // synchronous=FULL makes an acknowledged commit durable across power loss.
  database.pragma('journal_mode = WAL');
  database.pragma(`synchronous = ${synchronous}`);
  database.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  database.pragma('foreign_keys = ON');
  // Each transaction of a commit group is a savepoint, whose statement journal SQLite keeps in
  // memory up to 64 KiB and then spills to a temporary file, written and thrown away: 20 times
  // the bytes of the work itself for a new identity. In memory, it costs what the group changed
  // (temporary tables of large sorts live there too; the service's queries read by index).
  database.pragma('temp_store = MEMORY');
  // ANALYZE (run by `pragma optimize`, see refreshStatistics) reads about this many rows of each
  // index rather than all of them: statistics in milliseconds on a table of millions.
  database.pragma(`analysis_limit = ${ANALYSIS_LIMIT}`);
  return database;
}

/** The transactions sharing one COMMIT: `committed` resolves once it is durable. */
export class Group {
  /** Transactions kept in the group so far. */
  members = 0;
  readonly committed: Promise<void>;
  /** Resolves once the group committed or failed, whichever. */
  readonly settled: Promise<void>;
  private resolve!: () => void;
  private reject!: (error: unknown) => void;

  constructor() {
    this.committed = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.settled = this.committed.catch(() => undefined);
  }

  succeed(): void {
    this.resolve();
  }

  fail(error: unknown): void {
    this.reject(error);
  }
}

/**
 * Waits for a failed member's group: resolves once it committed; when it failed, throws
 * GroupRolledBack, since what the member saw of the group was never committed.
 */
async function settledCommitted(group: Group): Promise<void> {
  try {
    await group.committed;
  } catch (error) {
    throw new GroupRolledBack(error);
  }
}

/** Another process holds the write lock: BEGIN IMMEDIATE failed without waiting, nothing ran. */
export class WriteLockBusy extends Error {
  readonly code = 'SQLITE_BUSY';
}

/**
 * A statement of another transaction in the group failed in a way that made SQLite roll the
 * whole group back (a full disk, an I/O error): this transaction's work was lost with it, before
 * anything was acknowledged.
 */
export class GroupRolledBack extends Error {
  readonly code = 'SQLITE_ABORT';

  constructor(cause: unknown) {
    super('the transaction was rolled back with its commit group', { cause });
  }
}

/**
 * Kysely prepares every query afresh, and preparing costs SQLite more than running a primary-key
 * lookup. Kysely's queries carry their values as parameters, so the same SQL text recurs and its
 * statement can be reused (better-sqlite3 statements are reusable; one runs at a time per
 * connection). Bounded, since bulk inserts of varying sizes make new SQL.
 */
class StatementCache {
  private readonly statements = new Map<string, Prepared>();

  constructor(private readonly database: SqliteDatabase.Database) {}

  get(text: string): Prepared {
    let prepared = this.statements.get(text);
    if (prepared === undefined) {
      prepared = prepare(this.database, text);
      if (this.statements.size >= STATEMENT_CACHE_ENTRIES) this.statements.clear();
      this.statements.set(text, prepared);
    }
    return prepared;
  }
}

/** A statement, and for one that answers rows, what makes a row's object of its values. */
interface Prepared {
  readonly statement: SqliteDatabase.Statement;
  /** The row's shape: undefined for a statement that answers none, or whose rows are better-sqlite3's objects. */
  shape: RowShape | undefined;
}

interface RowShape {
  /** How many values a row has. */
  readonly width: number;
  readonly toRow: (values: unknown[]) => Record<string, unknown>;
}

/**
 * better-sqlite3 builds each row's object through V8's C++ API, a property at a time: for a page of
 * 50 customers (27 columns) that is most of the query's time. In raw mode it answers arrays, and a
 * function compiled once per statement makes objects of one shape from them, about three times
 * faster (120 µs a page against 400, better-sqlite3 12 on a 2-core EPYC).
 */
function prepare(database: SqliteDatabase.Database, text: string): Prepared {
  const statement = database.prepare(text);
  const shape = statement.reader ? rowShape(statement) : undefined;
  if (shape) statement.raw(true);
  return { statement, shape };
}

/**
 * The shape of the statement's rows as its columns are now. The names are SQLite's, quoted by
 * JSON.stringify; a name repeated (a join's `select *`) keeps the last value, as better-sqlite3's
 * objects do. A column named __proto__ (which a literal would take as the object's prototype)
 * keeps better-sqlite3's objects: undefined.
 */
function rowShape(statement: SqliteDatabase.Statement): RowShape | undefined {
  const names = statement.columns().map((column) => column.name);
  if (names.includes('__proto__')) return undefined;
  const fields = names.map((name, i) => `${JSON.stringify(name)}: values[${i}]`).join(', ');
  const toRow = new Function('values', `return { ${fields} };`) as RowShape['toRow'];
  return { width: names.length, toRow };
}

function run(prepared: Prepared, parameters: readonly unknown[]): QueryResult<unknown> {
  const { statement } = prepared;
  if (prepared.shape) {
    const rows = statement.all(parameters) as unknown[][];
    // SQLite prepares a statement again by itself when another connection changed the schema
    // (`select *` of a table that gained or lost a column): its rows then have another width.
    if (rows.length > 0 && rows[0]!.length !== prepared.shape.width) {
      prepared.shape = rowShape(statement);
      if (!prepared.shape) {
        // A column named __proto__ now: these rows made one by one (never run twice: it may have
        // written), better-sqlite3's objects from now on.
        statement.raw(false);
        const names = statement.columns().map((column) => column.name);
        return { rows: rows.map((values) => Object.fromEntries(names.map((name, i) => [name, values[i]]))) };
      }
    }
    return { rows: rows.map(prepared.shape.toRow) };
  }
  if (statement.reader) return { rows: statement.all(parameters) };
  const { changes, lastInsertRowid } = statement.run(parameters);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/** Turns taken in the order asked for. */
class FifoLock {
  private held = false;
  private readonly waiting: Array<() => void> = [];

  acquire(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }
}

/**
 * Kysely's driver: a connection per acquisition, which runs its statements on the reader or in
 * the group until Kysely begins a transaction on it, and on the writer from then on.
 */
class GroupCommitDriver implements Driver {
  constructor(private readonly sqlite: GroupCommitSqlite) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new GroupConnection(this.sqlite);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const member = connection as GroupConnection;
    member.group = await this.sqlite.begin();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await this.sqlite.commit(takeGroup(connection));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // Kysely also rolls back after a failed commit, which has already left the group.
    if ((connection as GroupConnection).group === null) return;
    await this.sqlite.rollback(takeGroup(connection));
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    await this.sqlite.close();
  }
}

function takeGroup(connection: DatabaseConnection): Group {
  const member = connection as GroupConnection;
  const group = member.group;
  if (group === null) throw new Error('no transaction is open on this connection');
  member.group = null;
  return group;
}

class GroupConnection implements DatabaseConnection {
  /** The group of the transaction open on this connection, if one is. */
  group: Group | null = null;

  constructor(private readonly sqlite: GroupCommitSqlite) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.group !== null) return this.sqlite.executeInTransaction(query) as QueryResult<R>;
    return (await this.sqlite.execute(query)) as QueryResult<R>;
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported; the error says so.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on SQLite here');
  }
}
