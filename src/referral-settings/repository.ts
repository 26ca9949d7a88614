import type { Kysely } from 'kysely';
import type { Database, ReferralSettingsRow } from '../storage/schema.js';
import type { ReferralSettings } from './schemas.js';

export async function findReferralSettings(
  db: Kysely<Database>,
  accountId: number,
): Promise<ReferralSettings | undefined> {
  const row = await db
    .selectFrom('referral_settings')
    .selectAll()
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row && toReferralSettings(row);
}

/** Creates or replaces the account's settings in one statement. */
export async function upsertReferralSettings(
  db: Kysely<Database>,
  accountId: number,
  settings: ReferralSettings,
  now: number,
): Promise<void> {
  const values = {
    status: settings.status,
    sender_reward_name: settings.sender_reward.name,
    sender_reward_image_url: settings.sender_reward.image.url,
    sender_reward_image_content_type: settings.sender_reward.image.content_type,
    receiver_reward_name: settings.receiver_reward.name,
    receiver_reward_image_url: settings.receiver_reward.image.url,
    receiver_reward_image_content_type: settings.receiver_reward.image.content_type,
    updated_at: now,
  };
  await db
    .insertInto('referral_settings')
    .values({ account_id: accountId, ...values })
    .onConflict((oc) => oc.column('account_id').doUpdateSet(values))
    .execute();
}

export async function deleteReferralSettings(db: Kysely<Database>, accountId: number): Promise<boolean> {
  const result = await db.deleteFrom('referral_settings').where('account_id', '=', accountId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

function toReferralSettings(row: ReferralSettingsRow): ReferralSettings {
  return {
    status: row.status,
    sender_reward: {
      name: row.sender_reward_name,
      image: { url: row.sender_reward_image_url, content_type: row.sender_reward_image_content_type },
    },
    receiver_reward: {
      name: row.receiver_reward_name,
      image: { url: row.receiver_reward_image_url, content_type: row.receiver_reward_image_content_type },
    },
  };
}
