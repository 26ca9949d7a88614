import type { Kysely, Transaction } from 'kysely';
import type { Direction } from '../pagination/cursor.js';
import type { Database, ReferralRow } from '../storage/schema.js';
import { DAY_MS } from '../time.js';

export type { ReferralRow } from '../storage/schema.js';

/** One new referral, pending, its rewards not yet written. */
export type NewReferral = Pick<
  ReferralRow,
  | 'account_id'
  | 'sender_customer_id'
  | 'receiver_customer_id'
  | 'receiver_email'
  | 'receiver_email_normalized'
  | 'receiver_mailbox'
  | 'referral_code'
  | 'expires_at'
  | 'created_at'
  | 'updated_at'
>;

/**
 * Inserts the referral unless the account has one for its receiver's mailbox (then undefined: the
 * unique indexes decide between racing requests, never a check-then-insert). Every unique index
 * of the table is an arbiter, the mailbox's and the older one on the normalised email alike: on
 * PostgreSQL a racing insert that met the email's index first would otherwise fail rather than
 * do nothing.
 */
export async function insertReferralIfAbsent(
  trx: Transaction<Database>,
  referral: NewReferral,
): Promise<ReferralRow | undefined> {
  return trx
    .insertInto('referrals')
    .values({ ...referral, status: 'pending' })
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .executeTakeFirst();
}

/** Records the receiver's reward of a referral this transaction wrote. */
export async function setReceiverReward(
  trx: Transaction<Database>,
  id: number,
  reward: { fulfillmentId: number | null; pointsTransactionId: number | null },
): Promise<ReferralRow> {
  return trx
    .updateTable('referrals')
    .set({
      receiver_reward_fulfillment_id: reward.fulfillmentId,
      receiver_points_transaction_id: reward.pointsTransactionId,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Whether the account has a referral for this mailbox (src/referrals/email.ts), whatever its status. */
export async function hasReferralFor(trx: Transaction<Database>, accountId: number, mailbox: string): Promise<boolean> {
  const row = await trx
    .selectFrom('referrals')
    .select('id')
    .where('account_id', '=', accountId)
    .where('receiver_mailbox', '=', mailbox)
    .executeTakeFirst();
  return row !== undefined;
}

/** How many referrals the sender started after `since`. */
export async function countStartedSince(trx: Transaction<Database>, senderId: number, since: number): Promise<number> {
  const row = await trx
    .selectFrom('referrals')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('sender_customer_id', '=', senderId)
    .where('created_at', '>', since)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Whether the customer has recorded any activity. Read here, not through the activities room:
 * that room calls this one in every activity's transaction, and a call back would make a circle.
 */
export async function hasActivity(trx: Transaction<Database>, customerId: number): Promise<boolean> {
  const row = await trx.selectFrom('activities').select('id').where('customer_id', '=', customerId).executeTakeFirst();
  return row !== undefined;
}

/** The receiver's pending referral (a customer is the receiver of at most one per account). */
export async function findPendingForReceiver(
  trx: Transaction<Database>,
  accountId: number,
  receiverId: number,
): Promise<ReferralRow | undefined> {
  return trx
    .selectFrom('referrals')
    .selectAll()
    .where('receiver_customer_id', '=', receiverId)
    .where('status', '=', 'pending')
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/**
 * Completes the referral if it is still pending (a racing completion that got there first leaves
 * it completed: then undefined, and this one gives nothing).
 */
export async function completeIfPending(
  trx: Transaction<Database>,
  id: number,
  completedAt: number,
  now: number,
): Promise<ReferralRow | undefined> {
  return trx
    .updateTable('referrals')
    .set({ status: 'completed', completed_at: completedAt, updated_at: now })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}

/** Records the sender's reward of a referral this transaction completed (or why there is none). */
export async function setSenderReward(
  trx: Transaction<Database>,
  id: number,
  reward: { fulfillmentId: number | null; pointsTransactionId: number | null; skipped: string | null },
): Promise<ReferralRow> {
  return trx
    .updateTable('referrals')
    .set({
      sender_reward_fulfillment_id: reward.fulfillmentId,
      sender_points_transaction_id: reward.pointsTransactionId,
      sender_reward_skipped: reward.skipped,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The account's referral with this id (another account's is not found). */
export async function findReferral(
  db: Kysely<Database>,
  accountId: number,
  id: number,
): Promise<ReferralRow | undefined> {
  return db
    .selectFrom('referrals')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

export interface ReferralFilters {
  senderCustomerId?: number;
  receiverEmailNormalized?: string;
  /** `expired` and `pending` are told apart by expires_at against `now`. */
  status?: 'pending' | 'completed' | 'expired';
  updatedAtMin?: number;
}

/** Up to `rows` of the account's referrals matching `filters` at `now`, beyond `boundary` (see keysetPage). */
export async function findReferralsPage(
  db: Kysely<Database>,
  accountId: number,
  filters: ReferralFilters,
  now: number,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<ReferralRow[]> {
  const { status } = filters;
  return db
    .selectFrom('referrals')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(filters.senderCustomerId !== undefined, (q) => q.where('sender_customer_id', '=', filters.senderCustomerId!))
    .$if(filters.receiverEmailNormalized !== undefined, (q) =>
      q.where('receiver_email_normalized', '=', filters.receiverEmailNormalized!),
    )
    .$if(status === 'completed', (q) => q.where('status', '=', 'completed'))
    .$if(status === 'pending', (q) => q.where('status', '=', 'pending').where('expires_at', '>', now))
    .$if(status === 'expired', (q) => q.where('status', '=', 'pending').where('expires_at', '<=', now))
    .$if(filters.updatedAtMin !== undefined, (q) => q.where('updated_at', '>=', filters.updatedAtMin!))
    .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
}

/** Counts a click on the customer's referral URL, in the day of `now`. */
export async function countClick(
  trx: Transaction<Database>,
  click: { accountId: number; customerId: number; now: number },
): Promise<void> {
  await trx
    .insertInto('referral_clicks')
    .values({
      account_id: click.accountId,
      customer_id: click.customerId,
      day: Math.floor(click.now / DAY_MS),
      clicks: 1,
    })
    .onConflict((oc) =>
      oc.columns(['customer_id', 'day']).doUpdateSet((eb) => ({ clicks: eb('referral_clicks.clicks', '+', 1) })),
    )
    .execute();
}

/** The program's figures since `since`: clicks, referrals made, completed, rewards issued. */
export async function programFigures(
  db: Kysely<Database>,
  accountId: number,
  since: number,
): Promise<{ clicks: number; referrals: number; completed: number; rewards: number }> {
  const clicks = await db
    .selectFrom('referral_clicks')
    .select((eb) => eb.fn.sum<number>('clicks').as('n'))
    .where('account_id', '=', accountId)
    .where('day', '>=', Math.floor(since / DAY_MS))
    .executeTakeFirst();
  const made = await db
    .selectFrom('referrals')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('created_at', '>=', since)
    .executeTakeFirstOrThrow();
  const completed = await db
    .selectFrom('referrals')
    .select((eb) => [
      eb.fn.countAll<number>().as('n'),
      eb.fn.count<number>('sender_reward_fulfillment_id').as('codes'),
      eb.fn.count<number>('sender_points_transaction_id').as('points'),
    ])
    .where('account_id', '=', accountId)
    .where('completed_at', '>=', since)
    .executeTakeFirstOrThrow();
  return {
    clicks: Number(clicks?.n ?? 0),
    referrals: Number(made.n),
    completed: Number(completed.n),
    // The friends' rewards (one per referral made) and the senders' (one per completion that gave one).
    rewards: Number(made.n) + Number(completed.codes) + Number(completed.points),
  };
}
