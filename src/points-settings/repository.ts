import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.js';
import type { PointsSettings } from './schemas.js';

/** The account's labels, or undefined when it never set them. */
export async function findPointsSettings(db: Kysely<Database>, accountId: number): Promise<PointsSettings | undefined> {
  const row = await db
    .selectFrom('points_settings')
    .select(['label_one', 'label_other'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row && { points_label: { one: row.label_one, other: row.label_other } };
}

/** Creates or replaces the account's settings in one statement. */
export async function upsertPointsSettings(
  db: Kysely<Database>,
  accountId: number,
  settings: PointsSettings,
  now: number,
): Promise<void> {
  const values = { label_one: settings.points_label.one, label_other: settings.points_label.other, updated_at: now };
  await db
    .insertInto('points_settings')
    .values({ account_id: accountId, ...values })
    .onConflict((oc) => oc.column('account_id').doUpdateSet(values))
    .execute();
}
