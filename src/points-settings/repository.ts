import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.js';
import { DEFAULT_POINTS_SETTINGS, type PointsSettings } from './schemas.js';

/** The account's settings, or undefined when it never set them. */
export async function findPointsSettings(db: Kysely<Database>, accountId: number): Promise<PointsSettings | undefined> {
  const row = await db
    .selectFrom('points_settings')
    .select(['label_one', 'label_other', 'expiry_inactivity_days'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return (
    row && {
      points_label: { one: row.label_one, other: row.label_other },
      points_expiry: row.expiry_inactivity_days === null ? null : { inactivity_days: row.expiry_inactivity_days },
    }
  );
}

/**
 * Stores a change to the account's settings in one statement: only the columns of what `change`
 * holds are written, so that two changes of different settings at once both stay; a first change
 * starts from the defaults.
 */
export async function upsertPointsSettings(
  db: Kysely<Database>,
  accountId: number,
  change: Partial<PointsSettings>,
  now: number,
): Promise<void> {
  const values = {
    ...(change.points_label ? { label_one: change.points_label.one, label_other: change.points_label.other } : {}),
    ...(change.points_expiry !== undefined
      ? { expiry_inactivity_days: change.points_expiry?.inactivity_days ?? null }
      : {}),
    updated_at: now,
  };
  await db
    .insertInto('points_settings')
    .values({
      account_id: accountId,
      label_one: DEFAULT_POINTS_SETTINGS.points_label.one,
      label_other: DEFAULT_POINTS_SETTINGS.points_label.other,
      ...values,
    })
    .onConflict((oc) => oc.column('account_id').doUpdateSet(values))
    .execute();
}

/** The accounts whose balances expire, with their days of inactivity. */
export async function findExpiringAccounts(
  db: Kysely<Database>,
): Promise<{ accountId: number; inactivityDays: number }[]> {
  const rows = await db
    .selectFrom('points_settings')
    .select(['account_id', 'expiry_inactivity_days'])
    .where('expiry_inactivity_days', 'is not', null)
    .orderBy('account_id')
    .execute();
  return rows.map((row) => ({ accountId: Number(row.account_id), inactivityDays: Number(row.expiry_inactivity_days) }));
}
