import type { Insertable, Kysely } from 'kysely';
import type { ActivitiesTable, ActivityRow, Database } from '../storage/schema.js';

/**
 * Inserts the activity unless the account already has one with its activity type and
 * `distinct_id`; undefined then (on PostgreSQL after waiting for the transaction that inserted
 * that one). An activity without `distinct_id` is always inserted.
 */
export async function insertActivityIfAbsent(
  db: Kysely<Database>,
  activity: Insertable<ActivitiesTable>,
): Promise<ActivityRow | undefined> {
  return db
    .insertInto('activities')
    .values(activity)
    .onConflict((oc) => oc.columns(['account_id', 'activity_type_id', 'distinct_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

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
