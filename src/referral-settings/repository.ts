import type { Kysely } from 'kysely';
import type { Database, ReferralSettingsRow } from '../storage/schema.js';
import type { ReferralProgram } from './schemas.js';

/** The account's program, every field; undefined when it has none. */
export async function findReferralProgram(
  db: Kysely<Database>,
  accountId: number,
): Promise<ReferralProgram | undefined> {
  const row = await db
    .selectFrom('referral_settings')
    .selectAll()
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row && toReferralProgram(row);
}

/** Creates or replaces the account's program in one statement. */
export async function upsertReferralProgram(
  db: Kysely<Database>,
  accountId: number,
  program: ReferralProgram,
  now: number,
): Promise<void> {
  const values = {
    status: program.status,
    sender_reward_name: program.sender_reward.name,
    sender_reward_image_url: program.sender_reward.image.url,
    sender_reward_image_content_type: program.sender_reward.image.content_type,
    sender_reward_fulfillment: program.sender_reward.fulfillment,
    sender_reward_points: program.sender_reward.points,
    receiver_reward_name: program.receiver_reward.name,
    receiver_reward_image_url: program.receiver_reward.image.url,
    receiver_reward_image_content_type: program.receiver_reward.image.content_type,
    receiver_reward_fulfillment: program.receiver_reward.fulfillment,
    receiver_reward_points: program.receiver_reward.points,
    qualifying_activity_token: program.qualifying_activity_token,
    minimum_amount: program.minimum_amount,
    window_days: program.window_days,
    landing_url: program.landing_url,
    sender_limit_per_30_days: program.sender_limit_per_30_days,
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

function toReferralProgram(row: ReferralSettingsRow): ReferralProgram {
  return {
    status: row.status,
    sender_reward: {
      name: row.sender_reward_name,
      image: { url: row.sender_reward_image_url, content_type: row.sender_reward_image_content_type },
      fulfillment: row.sender_reward_fulfillment,
      points: row.sender_reward_points,
    },
    receiver_reward: {
      name: row.receiver_reward_name,
      image: { url: row.receiver_reward_image_url, content_type: row.receiver_reward_image_content_type },
      fulfillment: row.receiver_reward_fulfillment,
      points: row.receiver_reward_points,
    },
    qualifying_activity_token: row.qualifying_activity_token,
    minimum_amount: row.minimum_amount,
    window_days: row.window_days,
    landing_url: row.landing_url,
    sender_limit_per_30_days: row.sender_limit_per_30_days,
  };
}
