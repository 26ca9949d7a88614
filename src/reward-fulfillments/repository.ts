import type { Kysely, Transaction } from 'kysely';
import { isoTime } from '../common-schemas.js';
import type { Direction } from '../pagination/cursor.js';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import type { Database, RewardFulfillmentRow } from '../storage/schema.js';
import type { RewardFulfillment } from './schemas.js';

/** Inserts a fulfillment unless its code is taken in the account (then undefined: draw another code). */
export async function insertFulfillmentIfCodeFree(
  trx: Transaction<Database>,
  fulfillment: Omit<RewardFulfillmentRow, 'id'>,
): Promise<RewardFulfillment | undefined> {
  const [row] = await insertFulfillmentQuery(trx, fulfillment);
  return row && toRewardFulfillment(row);
}

const insertFulfillmentQuery = compiledQuery((db, v: Omit<RewardFulfillmentRow, 'id'>) =>
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
}

/** Up to `rows` of the account's fulfillments matching `filters`, beyond `boundary` (see keysetPage). */
export async function findFulfillmentsPage(
  db: Kysely<Database>,
  accountId: number,
  filters: FulfillmentFilters,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<RewardFulfillment[]> {
  const found = await db
    .selectFrom('reward_fulfillments')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(filters.customerId !== undefined, (q) => q.where('customer_id', '=', filters.customerId!))
    .$if(filters.fulfillmentStatus !== undefined, (q) => q.where('fulfillment_status', '=', filters.fulfillmentStatus!))
    .$if(filters.usageStatus !== undefined, (q) => q.where('usage_status', '=', filters.usageStatus!))
    .$if(filters.updatedAtMin !== undefined, (q) => q.where('updated_at', '>=', filters.updatedAtMin!))
    .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
  return found.map(toRewardFulfillment);
}

/** The account's fulfillments with these ids (in no order). */
export async function findFulfillmentsByIds(
  db: Kysely<Database>,
  accountId: number,
  ids: readonly number[],
): Promise<RewardFulfillment[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('reward_fulfillments')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return rows.map(toRewardFulfillment);
}

export function toRewardFulfillment(row: RewardFulfillmentRow): RewardFulfillment {
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
    expires_at: null,
    usage_status: row.usage_status,
    used_at: null,
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
  };
}
