import { type ExpressionBuilder, type Kysely, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import { isoTime } from '../common-schemas.js';
import type { Direction } from '../pagination/cursor.js';
import { sincePlan, sinceRef, unindexed } from '../pagination/since.js';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import type { Database, RewardFulfillmentRow } from '../storage/schema.js';
import type { RewardFulfillment } from './schemas.js';

/** Inserts a fulfillment unless its code is taken in the account (then undefined: draw another code). */
export async function insertFulfillmentIfCodeFree(
  trx: Transaction<Database>,
  fulfillment: NewFulfillment,
): Promise<RewardFulfillment | undefined> {
  const [row] = await insertFulfillmentQuery(trx, fulfillment);
  return row && toRewardFulfillment(row, fulfillment.created_at);
}

/** A fulfillment's row to insert: unused, so never used yet. */
type NewFulfillment = Omit<RewardFulfillmentRow, 'id' | 'used_at'>;

const insertFulfillmentQuery = compiledQuery((db, v: NewFulfillment) =>
  db
    .insertInto('reward_fulfillments')
    .values(
      pick(v, [
        'account_id',
        'customer_id',
        'points_purchase_id',
        'name',
        'code',
        'image_url',
        'fulfillment_status',
        'usage_status',
        'expires_at',
        'created_at',
        'updated_at',
      ]),
    )
    .onConflict((oc) => oc.columns(['account_id', 'code']).doNothing())
    .returningAll(),
);

export interface FulfillmentFilters {
  customerId?: number;
  fulfillmentStatus?: RewardFulfillment['fulfillment_status'];
  usageStatus?: RewardFulfillment['usage_status'];
  updatedAtMin?: number;
  /** A code in its stored form (see normalCode). */
  code?: string;
}

/**
 * A code as stored: capitals, no spaces or dashes (codes are made of capitals and digits only,
 * code.ts), so that a code typed as `k7mp-2xq9 rt4w-bn3h` finds `K7MP2XQ9RT4WBN3H`.
 */
export function normalCode(code: string): string {
  return code.replace(/[\s-]+/g, '').toUpperCase();
}

/** Up to `rows` of the account's fulfillments matching `filters`, beyond `boundary` (see keysetPage). */
export async function findFulfillmentsPage(
  db: Kysely<Database>,
  accountId: number,
  filters: FulfillmentFilters,
  page: { direction: Direction; boundary: number | null; rows: number; now: number },
): Promise<RewardFulfillment[]> {
  const { direction, boundary, rows, now } = page;
  const usage = filters.usageStatus;
  const plan = await sincePlan(db, 'reward_fulfillments', accountId, filters, { direction, boundary, rows });
  const order = direction === 'next' ? 'desc' : 'asc';
  const matching = <O>(q: SelectQueryBuilder<Database, 'reward_fulfillments', O>) =>
    q
      .where('account_id', '=', accountId)
      .$if(filters.code !== undefined, (q) => q.where('code', '=', filters.code!))
      .$if(filters.customerId !== undefined, (q) => q.where('customer_id', '=', filters.customerId!))
      .$if(filters.fulfillmentStatus !== undefined, (q) =>
        q.where('fulfillment_status', '=', filters.fulfillmentStatus!),
      )
      // `expired` is an issued, unused code past its expires_at; `unused`, any other unused one.
      .$if(usage === 'expired', (q) =>
        q
          .where('usage_status', '=', 'unused')
          .where('fulfillment_status', '=', 'issued')
          .where('expires_at', '<=', now),
      )
      .$if(usage === 'unused', (q) =>
        q
          .where('usage_status', '=', 'unused')
          .where((eb) =>
            eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now), eb('fulfillment_status', '<>', 'issued')]),
          ),
      )
      .$if(usage === 'used' || usage === 'untracked', (q) =>
        q.where('usage_status', '=', usage as 'used' | 'untracked'),
      )
      .$if(filters.updatedAtMin !== undefined, (q) =>
        q.where(sinceRef(plan, 'updated_at'), '>=', filters.updatedAtMin!),
      )
      .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!));
  const found = await (plan === 'range'
    ? db
        .selectFrom('reward_fulfillments')
        .selectAll()
        .where(
          'id',
          'in',
          matching(db.selectFrom('reward_fulfillments').select('id')).orderBy(unindexed('id'), order).limit(rows),
        )
    : matching(db.selectFrom('reward_fulfillments').selectAll()).limit(rows)
  )
    .orderBy('id', order)
    .execute();
  return found.map((row) => toRewardFulfillment(row, now));
}

/** The account's fulfillment `id`, as stored (its last committed state: read after a conditional update that waited for any other). */
export async function findFulfillmentRow(
  trx: Transaction<Database>,
  accountId: number,
  id: number,
): Promise<RewardFulfillmentRow | undefined> {
  return trx
    .selectFrom('reward_fulfillments')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** Marks the account's fulfillment used at `usedAt` (as of `now`); answers the row after, or undefined when it could not be used then. */
export async function markUsed(
  trx: Transaction<Database>,
  use: { accountId: number; id: number; usedAt: number; now: number },
): Promise<RewardFulfillmentRow | undefined> {
  const { accountId, id, usedAt, now } = use;
  return trx
    .updateTable('reward_fulfillments')
    .set({ usage_status: 'used', used_at: usedAt, updated_at: now })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('created_at', '<=', usedAt)
    .where(usableAt(now))
    .returningAll()
    .executeTakeFirst();
}

/**
 * Marks used, at `usedAt`, the customer's fulfillments with these codes (stored form) that are
 * issued, unused and not expired (an order that applied them); answers the rows after.
 */
export async function markCodesUsed(
  trx: Transaction<Database>,
  accountId: number,
  customerId: number,
  codes: readonly string[],
  times: { usedAt: number; now: number },
): Promise<RewardFulfillmentRow[]> {
  if (codes.length === 0) return [];
  return (
    trx
      .updateTable('reward_fulfillments')
      // Never before it was issued: an order's time comes from the store's clock.
      .set({
        usage_status: 'used',
        used_at: sql<number>`case when created_at > ${times.usedAt} then created_at else ${times.usedAt} end`,
        updated_at: times.now,
      })
      .where(usableAt(times.now))
      .where('account_id', '=', accountId)
      .where('customer_id', '=', customerId)
      .where('code', 'in', [...new Set(codes)])
      .returningAll()
      .execute()
  );
}

/** Only fulfillments that can be used (or cancelled) at `now`: issued, unused, not expired. */
const usableAt = (now: number) => (eb: ExpressionBuilder<Database, 'reward_fulfillments'>) =>
  eb.and([
    eb('fulfillment_status', '=', 'issued'),
    eb('usage_status', '=', 'unused'),
    eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]),
  ]);

/** Cancels the fulfillment if it is issued, unused and not expired; answers the row after, or undefined. */
export async function markCancelled(
  trx: Transaction<Database>,
  cancel: { accountId: number; id: number; now: number },
): Promise<RewardFulfillmentRow | undefined> {
  const { accountId, id, now } = cancel;
  return trx
    .updateTable('reward_fulfillments')
    .set({ fulfillment_status: 'cancelled', updated_at: now })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where(usableAt(now))
    .returningAll()
    .executeTakeFirst();
}

/** The points the purchase spent. */
export async function findPointsSpent(trx: Transaction<Database>, purchaseId: number): Promise<number> {
  const row = await trx
    .selectFrom('points_purchases')
    .select('points_spent')
    .where('id', '=', purchaseId)
    .executeTakeFirstOrThrow();
  return Number(row.points_spent);
}

/** The account's fulfillments with these ids (in no order). */
export async function findFulfillmentsByIds(
  db: Kysely<Database>,
  accountId: number,
  ids: readonly number[],
  now: number,
): Promise<RewardFulfillment[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('reward_fulfillments')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return rows.map((row) => toRewardFulfillment(row, now));
}

/** A fulfillment as the API shows it at `now`: an issued, unused code past its expires_at reads `expired`. */
export function toRewardFulfillment(row: RewardFulfillmentRow, now: number): RewardFulfillment {
  const expiresAt = row.expires_at === null ? null : Number(row.expires_at);
  const expired =
    row.fulfillment_status === 'issued' && row.usage_status === 'unused' && expiresAt !== null && expiresAt <= now;
  return {
    id: row.id,
    name: row.name,
    code: row.code,
    customer_id: row.customer_id,
    fulfillment_status: row.fulfillment_status,
    image_url: row.image_url,
    action_text: null,
    action_url: null,
    usage_instructions: null,
    terms_and_conditions: null,
    expires_at: expiresAt === null ? null : isoTime(expiresAt),
    usage_status: expired ? 'expired' : row.usage_status,
    used_at: row.used_at === null ? null : isoTime(Number(row.used_at)),
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
  };
}
