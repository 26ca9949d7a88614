import type { Kysely, SelectQueryBuilder, Transaction } from 'kysely';
import { isoTime } from '../common-schemas.js';
import type { Direction } from '../pagination/cursor.js';
import { sincePlan, sinceRef, unindexed } from '../pagination/since.js';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import type { Database, NewPointsTransaction, PointsTransactionRow } from '../storage/schema.js';
import type { PointsTransaction } from './schemas.js';

/**
 * Inserts a points transaction. The database moves the customer's balance and points earned in
 * the same statement (the trigger of migration 2026-11-24T0000), and refuses a balance below 0.
 */
export async function insertPointsTransaction(
  trx: Transaction<Database>,
  row: NewPointsTransaction,
): Promise<PointsTransaction> {
  const [inserted] = await insertTransactionQuery(trx, row);
  if (!inserted) throw new Error('the points transaction was not inserted');
  return toPointsTransaction(inserted);
}

const insertTransactionQuery = compiledQuery((db, v: NewPointsTransaction) =>
  db
    .insertInto('points_transactions')
    .values(
      pick(v, [
        'account_id',
        'customer_id',
        'points_change',
        'description',
        'internal_note',
        'activity_id',
        'points_purchase_id',
        'earning_rule_id',
        'occurred_at',
        'created_at',
        'updated_at',
        'created_by_user_id',
        'counts_as_earned',
      ]),
    )
    .returningAll(),
);

/** Inserts entries in one statement (the ledger's trigger applies each); the entries, in their order. */
export async function insertPointsTransactions(
  trx: Transaction<Database>,
  rows: readonly NewPointsTransaction[],
): Promise<PointsTransaction[]> {
  if (rows.length === 0) return [];
  const inserted = await trx.insertInto('points_transactions').values(rows).returningAll().execute();
  return inserted.map(toPointsTransaction).sort((a, b) => a.id - b.id);
}

export async function findPointsTransaction(
  db: Kysely<Database>,
  accountId: number,
  id: number,
): Promise<PointsTransaction | undefined> {
  const row = await db
    .selectFrom('points_transactions')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row && toPointsTransaction(row);
}

export interface PointsTransactionFilters {
  customerId?: number;
  updatedAtMin?: number;
}

/** Up to `rows` of the account's transactions matching `filters`, beyond `boundary` (see keysetPage). */
export async function findPointsTransactionsPage(
  db: Kysely<Database>,
  accountId: number,
  filters: PointsTransactionFilters,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<PointsTransaction[]> {
  const plan = await sincePlan(db, 'points_transactions', accountId, filters, { direction, boundary, rows });
  const order = direction === 'next' ? 'desc' : 'asc';
  const matching = <O>(q: SelectQueryBuilder<Database, 'points_transactions', O>) =>
    q
      .where('account_id', '=', accountId)
      .$if(filters.customerId !== undefined, (q) => q.where('customer_id', '=', filters.customerId!))
      .$if(filters.updatedAtMin !== undefined, (q) =>
        q.where(sinceRef(plan, 'updated_at'), '>=', filters.updatedAtMin!),
      )
      .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!));
  const found = await (plan === 'range'
    ? db
        .selectFrom('points_transactions')
        .selectAll()
        .where(
          'id',
          'in',
          matching(db.selectFrom('points_transactions').select('id')).orderBy(unindexed('id'), order).limit(rows),
        )
    : matching(db.selectFrom('points_transactions').selectAll()).limit(rows)
  )
    .orderBy('id', order)
    .execute();
  return found.map(toPointsTransaction);
}

/** The transactions an activity credited, ascending id. */
export async function findActivityTransactions(db: Kysely<Database>, activityId: number): Promise<PointsTransaction[]> {
  const rows = await db
    .selectFrom('points_transactions')
    .selectAll()
    .where('activity_id', '=', activityId)
    .orderBy('id')
    .execute();
  return rows.map(toPointsTransaction);
}

/** How many credits `ruleId` gave the customer, in all: what a lifetime limit counts. */
export async function countCredits(db: Kysely<Database>, customerId: number, ruleId: number): Promise<number> {
  const [row] = await countCreditsQuery(db, { customerId, ruleId });
  return Number(row?.count ?? 0);
}

// Served by the index (customer_id, earning_rule_id, occurred_at), as are the credit times below.
const countCreditsQuery = compiledQuery((db, v: { customerId: number; ruleId: number }) =>
  db
    .selectFrom('points_transactions')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('customer_id', '=', v.customerId)
    .where('earning_rule_id', '=', v.ruleId),
);

/** How many credits `ruleId` gave the customer with a time in (after, upTo]. */
export async function countCreditsIn(
  db: Kysely<Database>,
  v: { customerId: number; ruleId: number; after: number; upTo: number },
): Promise<number> {
  const [row] = await countCreditsInQuery(db, v);
  return Number(row?.count ?? 0);
}

const countCreditsInQuery = compiledQuery(
  (db, v: { customerId: number; ruleId: number; after: number; upTo: number }) =>
    db
      .selectFrom('points_transactions')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('customer_id', '=', v.customerId)
      .where('earning_rule_id', '=', v.ruleId)
      .where('occurred_at', '>', v.after)
      .where('occurred_at', '<=', v.upTo),
);

/** The times of credits of one rule to one customer around an instant (see findCreditTimesAround). */
export interface CreditTimesAround {
  /** In (after, time], nearest first. */
  earlier: number[];
  /** In (time, upTo], nearest first. */
  later: number[];
}

// A type, not an interface: compiledQuery's values must be a Record.
type AroundValues = { customerId: number; ruleId: number; after: number; time: number; upTo: number; each: number };

/**
 * The times of the credits `ruleId` gave the customer in (after, time] and in (time, upTo], at
 * least the `each` nearest to `time` on either side (all of them, as a rule): what a rolling limit
 * checks (roomFor in src/activities/window.ts). Served by the index (customer_id,
 * earning_rule_id, occurred_at).
 *
 * While every window holds at most `each` credits, the range (after, upTo] of reachOf holds at
 * most 3 × each (three windows cover it), so one range scan of at most 3 × each + 1 rows reads
 * them all. Only more rows than that (credits given before issue 27's fix, past the limit) need
 * the second statement, two range scans that stop after the `each` nearest (an ORDER BY with a
 * LIMIT, which SQLite runs markedly slower than the plain range scan).
 */
export async function findCreditTimesAround(db: Kysely<Database>, v: AroundValues): Promise<CreditTimesAround> {
  const most = 3 * v.each + 1;
  let rows = await creditTimesInQuery(db, {
    customerId: v.customerId,
    ruleId: v.ruleId,
    after: v.after,
    upTo: v.upTo,
    most,
  });
  if (rows.length >= most) rows = await creditTimesAroundQuery(db, v);
  const earlier: number[] = [];
  const later: number[] = [];
  for (const row of rows) {
    const time = Number(row.occurred_at);
    (time <= v.time ? earlier : later).push(time);
  }
  // Neither statement orders its rows: each side is sorted here, nearest first.
  earlier.sort((a, b) => b - a);
  later.sort((a, b) => a - b);
  return { earlier, later };
}

const creditTimesInQuery = compiledQuery(
  (db, v: { customerId: number; ruleId: number; after: number; upTo: number; most: number }) =>
    db
      .selectFrom('points_transactions')
      .select('occurred_at')
      .where('customer_id', '=', v.customerId)
      .where('earning_rule_id', '=', v.ruleId)
      .where('occurred_at', '>', v.after)
      .where('occurred_at', '<=', v.upTo)
      .limit(v.most),
);

const creditTimes = (db: Kysely<Database>, v: AroundValues) =>
  db
    .selectFrom('points_transactions')
    .select('occurred_at')
    .where('customer_id', '=', v.customerId)
    .where('earning_rule_id', '=', v.ruleId)
    .limit(v.each);

// The `each` nearest on either side, each in a subquery of its own: SQLite allows no ORDER BY or
// LIMIT on a member of a UNION.
const creditTimesAroundQuery = compiledQuery((db, v: AroundValues) =>
  db
    .selectFrom(
      creditTimes(db, v)
        .where('occurred_at', '>', v.after)
        .where('occurred_at', '<=', v.time)
        .orderBy('occurred_at', 'desc')
        .as('earlier'),
    )
    .select('occurred_at')
    .unionAll(
      db
        .selectFrom(
          creditTimes(db, v)
            .where('occurred_at', '>', v.time)
            .where('occurred_at', '<=', v.upTo)
            .orderBy('occurred_at')
            .as('later'),
        )
        .select('occurred_at'),
    ),
);

function toPointsTransaction(row: PointsTransactionRow): PointsTransaction {
  return {
    id: row.id,
    customer_id: row.customer_id,
    points_change: row.points_change,
    description: row.description,
    internal_note: row.internal_note,
    activity_id: row.activity_id,
    points_purchase_id: row.points_purchase_id,
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
  };
}
