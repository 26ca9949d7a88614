import type { Kysely, Transaction } from 'kysely';
import { isoTime } from '../common-schemas.js';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import type { ActivityRow, Database } from '../storage/schema.js';
import type { Activity } from './schemas.js';

/** An activity as stored: the API's form but for its token and credits (the service adds them). */
export type ActivityRecord = Omit<Activity, 'token' | 'points_transactions'>;

/**
 * Inserts the activity unless the account already has one with its activity type and
 * `distinct_id`; undefined then (on PostgreSQL after waiting for the transaction that inserted
 * that one). An activity without `distinct_id` is always inserted.
 */
export async function insertActivityIfAbsent(
  trx: Transaction<Database>,
  activity: Omit<ActivityRow, 'id'>,
): Promise<ActivityRecord | undefined> {
  const [row] = await insertActivityQuery(trx, activity);
  return row && toActivityRecord(row);
}

const insertActivityQuery = compiledQuery((db, v: Omit<ActivityRow, 'id'>) =>
  db
    .insertInto('activities')
    .values(
      pick(v, [
        'account_id',
        'customer_id',
        'activity_type_id',
        'distinct_id',
        'properties',
        'created_on_origin_at',
        'occurred_at',
        'created_at',
        'updated_at',
      ]),
    )
    .onConflict((oc) => oc.columns(['account_id', 'activity_type_id', 'distinct_id']).doNothing())
    .returningAll(),
);

/** The account's activity of this activity type and `distinct_id`, if any. */
export async function findActivityByDistinctId(
  db: Kysely<Database>,
  accountId: number,
  activityTypeId: number,
  distinctId: string,
): Promise<ActivityRecord | undefined> {
  const row = await db
    .selectFrom('activities')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('activity_type_id', '=', activityTypeId)
    .where('distinct_id', '=', distinctId)
    .executeTakeFirst();
  return row && toActivityRecord(row);
}

function toActivityRecord(row: ActivityRow): ActivityRecord {
  return {
    id: row.id,
    customer_id: row.customer_id,
    distinct_id: row.distinct_id,
    properties: JSON.parse(row.properties) as Record<string, unknown>,
    created_on_origin_at: row.created_on_origin_at === null ? null : isoTime(row.created_on_origin_at),
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
  };
}
