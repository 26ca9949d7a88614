import type SqliteDatabase from 'better-sqlite3';
import type { Changes } from './change-feed.js';

/**
 * Changes other connections made to a SQLite file (the other workers of WORKERS > 1, the
 * `loyalty` command), seen through `PRAGMA data_version`: a number SQLite moves whenever another
 * connection commits to the file, read from shared memory without touching a table
 * (https://sqlite.org/pragma.html#pragma_data_version). When it has moved, every cache forgets
 * everything. This process's own writes do not move it: its services forget what they change
 * themselves, as they do on PostgreSQL.
 *
 * Reading the number costs a read transaction (two file locks and an fstat, about 5 µs), so the
 * requests of one turn of the event loop share one reading, as the writes of a turn share one
 * COMMIT: `isLive()` answers once the turn's requests have all arrived (`setImmediate`), from a
 * reading taken then. Every request that asked was read from its socket before that reading, so
 * a change committed elsewhere before a request arrives is always seen by that request.
 */
export class SqliteChanges implements Changes {
  private version: number | null = null;
  private readonly resetListeners = new Set<() => void>();
  /** Prepared once: `database.pragma()` would prepare the statement again on every request. */
  private readonly dataVersion: SqliteDatabase.Statement<[], number>;
  /** The reading the requests of this turn wait for; null when none has asked yet. */
  private reading: Promise<boolean> | null = null;
  /** How many times the number was read (for the tests: one per turn, not per request). */
  readings = 0;

  constructor(database: SqliteDatabase.Database) {
    this.dataVersion = database.prepare<[], number>('PRAGMA data_version').pluck();
  }

  isLive(): Promise<boolean> {
    this.reading ??= new Promise((resolve) =>
      setImmediate(() => {
        this.reading = null;
        resolve(this.read());
      }),
    );
    return this.reading;
  }

  /**
   * Reads the number now, for this caller alone (a write transaction, which must not wait for
   * the turn's shared reading: its group would commit meanwhile, see the sqlite driver).
   */
  isLiveNow(): boolean {
    return this.read();
  }

  /** Reads the number now; false for a closed database, where nothing may be kept. */
  private read(): boolean {
    let version: number;
    try {
      version = this.dataVersion.get() as number;
    } catch {
      return false;
    }
    this.readings++;
    if (this.version !== null && version !== this.version) {
      for (const listener of this.resetListeners) listener();
    }
    this.version = version;
    return true;
  }

  /** Other connections' changes are not told apart by account: any change resets everything. */
  onChange(): () => void {
    return () => {};
  }

  onReset(listener: () => void): void {
    this.resetListeners.add(listener);
  }
}
