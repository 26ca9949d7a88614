import type { Kysely } from 'kysely';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import type { ActivityRow, Database } from '../storage/schema.js';

/**
 * Inserts the activity unless the account already has one with its activity type and
 * `distinct_id`; undefined then (on PostgreSQL after waiting for the transaction that inserted
 * that one). An activity without `distinct_id` is always inserted.
 */
export async function insertActivityIfAbsent(
  db: Kysely<Database>,
  activity: Omit<ActivityRow, 'id'>,
): Promise<ActivityRow | undefined> {
  const [row] = await insertActivityQuery(db, activity);
  return row;
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

export async function findActivityByDistinctId(
  db: Kysely<Database>,
  accountId: number,
  activityTypeId: number,
  distinctId: string,
): Promise<ActivityRow | undefined> {
  return db
    .selectFrom('activities')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('activity_type_id', '=', activityTypeId)
    .where('distinct_id', '=', distinctId)
    .executeTakeFirst();
}
