import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from './schema.js';

/**
 * What a piece of work inside one database transaction is handed. A function that must run inside
 * a transaction (it locks a row, posts to the ledger, claims an idempotency key) takes a `Work`,
 * or at least its `trx`: a `Transaction<Database>`, which a plain `Kysely<Database>` is not, so a
 * call outside a transaction does not compile.
 *
 * This is where the outbox attaches (the events issue): the events a change causes are written
 * through this context, in `trx`, so they commit or roll back with the change.
 */
export interface Work {
  /** The transaction: every statement of the work runs on it. */
  readonly trx: Transaction<Database>;
  /** The clock's time for the work: what its rows record as created or updated. */
  readonly now: number;
}

/**
 * The one owner of transactions: every write path opens its transaction here (an architecture
 * test refuses `.transaction()` anywhere else in src/, migrations aside).
 */
export class UnitOfWork {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /**
   * Runs `work` in one transaction: committed when it returns, rolled back when it throws.
   * `now` is the clock's time unless the caller fixed it before (a retry keeps its first time).
   */
  run<T>(work: (w: Work) => Promise<T>, now: number = this.clock.now()): Promise<T> {
    return this.db.transaction().execute((trx) => work({ trx, now }));
  }
}
