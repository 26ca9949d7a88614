import type SqliteDatabase from 'better-sqlite3';
import type { Changes } from './change-feed.js';

/**
 * Changes other connections made to a SQLite file (the other workers of WORKERS > 1, the
 * `loyalty` command), seen through `PRAGMA data_version`: a number SQLite moves whenever another
 * connection commits to the file, read from shared memory without touching a table
 * (https://sqlite.org/pragma.html#pragma_data_version). Each `isLive()` reads it; when it has
 * moved, every cache forgets everything. This process's own writes do not move it: its services
 * forget what they change themselves, as they do on PostgreSQL. better-sqlite3 is synchronous, so
 * the check happens before the cache is consulted, and a change committed elsewhere before a
 * request arrives is always seen by that request.
 */
export class SqliteChanges implements Changes {
  private version: number | null = null;
  private readonly resetListeners = new Set<() => void>();
  /** Prepared once: `database.pragma()` would prepare the statement again on every request. */
  private readonly dataVersion: SqliteDatabase.Statement<[], number>;

  constructor(database: SqliteDatabase.Database) {
    this.dataVersion = database.prepare<[], number>('PRAGMA data_version').pluck();
  }

  isLive(): boolean {
    let version: number;
    try {
      version = this.dataVersion.get() as number;
    } catch {
      // A closed database: nothing may be kept.
      return false;
    }
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
