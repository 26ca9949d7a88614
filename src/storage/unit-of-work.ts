import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from './schema.js';

/**
 * What a piece of work inside one database transaction is handed. A function that must run inside
 * a transaction (it locks a row, posts to the ledger, claims an idempotency key) takes a `Work`,
 * or at least its `trx`: a `Transaction<Database>`, which a plain `Kysely<Database>` is not, so a
 * call outside a transaction does not compile.
 *
 * The outbox rides on it: the events a change causes are written in `trx` (EventsService.record),
 * so they commit or roll back with the change, and `afterCommit` wakes the job runner once they
 * are there to be delivered.
 */
export interface Work {
  /** The transaction: every statement of the work runs on it. */
  readonly trx: Transaction<Database>;
  /** The clock's time for the work: what its rows record as created or updated. */
  readonly now: number;
  /**
   * Runs `callback` after the work has returned, still inside its transaction (in the order they
   * were added): the outbox writes the events the work recorded here, in one statement.
   */
  beforeCommit(callback: () => Promise<void>): void;
  /** Calls `callback` once the transaction has committed (never when it rolls back). */
  afterCommit(callback: () => void): void;
}

/**
 * A read made once per unit of work and key, in its transaction: later asks within the same work
 * share the first one's answer (the account's tiers, its points expiry, shown with every customer
 * a work's events carry). Forgotten with the work.
 */
export class OncePerWork<K, V> {
  private readonly byWork = new WeakMap<Work, Map<K, Promise<V>>>();

  get(w: Work, key: K, read: () => Promise<V>): Promise<V> {
    let byKey = this.byWork.get(w);
    if (!byKey) {
      byKey = new Map();
      this.byWork.set(w, byKey);
    }
    let value = byKey.get(key);
    if (!value) {
      value = read();
      byKey.set(key, value);
    }
    return value;
  }
}

/** Runs of a unit of work that PostgreSQL rolled back to break a deadlock, at most. */
const DEADLOCK_ATTEMPTS = 3;

/**
 * deadlock_detected and serialization_failure: the transaction was rolled back whole and may run
 * again. So may one that placed a customer in a VIP tier deleted meanwhile (foreign_key_violation
 * on customers.vip_tier_id: the deletion locked the tier first, see lockTier): run again, it reads
 * the tiers without it.
 */
function isRetryable(error: unknown): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  if (code === '23503') return typeof constraint === 'string' && constraint.includes('vip_tier_id');
  return code === '40P01' || code === '40001';
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
  async run<T>(work: (w: Work) => Promise<T>, now: number = this.clock.now()): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(work, now);
      } catch (error) {
        // PostgreSQL rolled the whole transaction back to break a lock cycle (two customers'
        // changes that each lock the other, such as friends who referred each other ordering at
        // once): nothing of it was kept, so it runs again. Past the attempts: 503 (error-mapping.ts).
        if (!isRetryable(error) || attempt >= DEADLOCK_ATTEMPTS) throw error;
      }
    }
  }

  private async once<T>(work: (w: Work) => Promise<T>, now: number): Promise<T> {
    const committed: (() => void)[] = [];
    const result = await this.db.transaction().execute(async (trx) => {
      const finishing: (() => Promise<void>)[] = [];
      const value = await work({
        trx,
        now,
        beforeCommit: (callback) => void finishing.push(callback),
        afterCommit: (callback) => void committed.push(callback),
      });
      // A callback may add another (for instance an event recorded while finishing): all run.
      for (let i = 0; i < finishing.length; i++) await finishing[i]!();
      return value;
    });
    for (const callback of committed) callback();
    return result;
  }
}
