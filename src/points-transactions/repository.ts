import type { Kysely } from 'kysely';
import { isoTime } from '../common-schemas.js';
import type { Direction } from '../pagination/cursor.js';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import type { Database, NewPointsTransaction, PointsTransactionRow } from '../storage/schema.js';
import type { PointsTransaction } from './schemas.js';

/**
 * Inserts a points transaction. The database moves the customer's balance and points earned in
 * the same statement (the trigger of migration 2026-11-24T0000), and refuses a balance below 0.
 */
export async function insertPointsTransaction(
  db: Kysely<Database>,
  row: NewPointsTransaction,
): Promise<PointsTransaction> {
  const [inserted] = await insertTransactionQuery(db, row);
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
      ]),
    )
    .returningAll(),
);

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
  const found = await db
    .selectFrom('points_transactions')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(filters.customerId !== undefined, (q) => q.where('customer_id', '=', filters.customerId!))
    .$if(filters.updatedAtMin !== undefined, (q) => q.where('updated_at', '>=', filters.updatedAtMin!))
    .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
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

/**
 * How many credits `ruleId` gave the customer: in all, or with a time in `(after, upTo]`.
 * Served by the index (customer_id, earning_rule_id, occurred_at).
 */
export async function countCredits(
  db: Kysely<Database>,
  customerId: number,
  ruleId: number,
  window: { after: number; upTo: number } | null,
): Promise<number> {
  const [row] =
    window === null
      ? await countAllCreditsQuery(db, { customerId, ruleId })
      : await countCreditsInQuery(db, { customerId, ruleId, after: window.after, upTo: window.upTo });
  return Number(row?.count ?? 0);
}

const creditCount = (db: Kysely<Database>, v: { customerId: number; ruleId: number }) =>
  db
    .selectFrom('points_transactions')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('customer_id', '=', v.customerId)
    .where('earning_rule_id', '=', v.ruleId);

const countAllCreditsQuery = compiledQuery(creditCount);

const countCreditsInQuery = compiledQuery(
  (db, v: { customerId: number; ruleId: number; after: number; upTo: number }) =>
    creditCount(db, v).where('occurred_at', '>', v.after).where('occurred_at', '<=', v.upTo),
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
