import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// The referral program that runs (docs/referrals.md): the program's settings beyond the spec's
// shape, a referral code for every member (existing members get theirs here), the referrals, the
// clicks on referral URLs, and reward fulfillments that a referral issues (no purchase behind them).

/** Members given a code per statement while existing customers are brought up to date. */
const BACKFILL_BATCH = 500;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * A referral code as src/referrals/code.ts makes them (12 random base62 characters), written here
 * again: migrations never import the application's code.
 */
function referralCode(): string {
  let code = '';
  while (code.length < 12) {
    for (const byte of randomBytes(16)) {
      // 248 = 4 × 62: bytes above it are dropped so that every character is equally likely.
      if (byte < 248 && code.length < 12) code += BASE62[byte % 62];
    }
  }
  return code;
}

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  for (const side of ['sender', 'receiver']) {
    await db.schema
      .alterTable('referral_settings')
      .addColumn(`${side}_reward_fulfillment`, 'text', (c) =>
        c
          .notNull()
          .defaultTo('code')
          .check(sql.raw(`${side}_reward_fulfillment in ('code', 'points')`)),
      )
      .execute();
    await db.schema.alterTable('referral_settings').addColumn(`${side}_reward_points`, 'integer').execute();
  }
  await db.schema.alterTable('referral_settings').addColumn('qualifying_activity_token', 'text').execute();
  // A decimal, as text: compared exactly with an activity's properties.amount.
  await db.schema
    .alterTable('referral_settings')
    .addColumn('minimum_amount', 'text', (c) => c.notNull().defaultTo('0'))
    .execute();
  await db.schema
    .alterTable('referral_settings')
    .addColumn('window_days', 'integer', (c) => c.notNull().defaultTo(30))
    .execute();
  await db.schema.alterTable('referral_settings').addColumn('landing_url', 'text').execute();
  await db.schema
    .alterTable('referral_settings')
    .addColumn('sender_limit_per_30_days', 'integer', (c) => c.notNull().defaultTo(50))
    .execute();

  // The URL is made from the code and the server's referral base when shown; the code is stored.
  await db.schema.alterTable('customers').renameColumn('referral_url', 'referral_code').execute();
  await db.schema.createIndex('customers_referral_code').on('customers').column('referral_code').unique().execute();
  for (;;) {
    const members: { id: number }[] = await db
      .selectFrom('customers')
      .select('id')
      .where('state', '=', 'member')
      .where('referral_code', 'is', null)
      .orderBy('id')
      .limit(BACKFILL_BATCH)
      .execute();
    if (members.length === 0) break;
    const codes = sql.join(
      members.map((m) => sql`when ${m.id} then ${referralCode()}`),
      sql` `,
    );
    await sql`update customers set referral_code = case id ${codes} end
      where id in (${sql.join(members.map((m) => m.id))})`.execute(db);
  }

  await widenRewardFulfillments(db, pg);

  await db.schema
    .createTable('referrals')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('sender_customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('receiver_customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('receiver_email', 'text', (c) => c.notNull())
    // The receiver's email as customers are matched on it: one referral per email and account.
    .addColumn('receiver_email_normalized', 'text', (c) => c.notNull())
    // The sender's code the referral was made with (null: made naming the sender by id).
    .addColumn('referral_code', 'text')
    // `expired` is never stored: a pending referral past expires_at is shown expired.
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'completed')`))
    .addColumn('expires_at', big, (c) => c.notNull())
    .addColumn('completed_at', big)
    .addColumn('receiver_reward_fulfillment_id', ref, (c) => c.references('reward_fulfillments.id'))
    .addColumn('receiver_points_transaction_id', ref, (c) => c.references('points_transactions.id'))
    .addColumn('sender_reward_fulfillment_id', ref, (c) => c.references('reward_fulfillments.id'))
    .addColumn('sender_points_transaction_id', ref, (c) => c.references('points_transactions.id'))
    // Why a completed referral gave the sender nothing (`sender_not_member`), else null.
    .addColumn('sender_reward_skipped', 'text')
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .addUniqueConstraint('referrals_account_receiver_email', ['account_id', 'receiver_email_normalized'])
    .execute();
  // The list, id descending; with updated_at_min; a sender's referrals (and the 30-day limit); the
  // receiver's pending referral, looked for in every activity's transaction.
  await db.schema.createIndex('referrals_account').on('referrals').columns(['account_id', 'id']).execute();
  await db.schema
    .createIndex('referrals_account_updated')
    .on('referrals')
    .columns(['account_id', 'updated_at'])
    .execute();
  await db.schema
    .createIndex('referrals_sender')
    .on('referrals')
    .columns(['sender_customer_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('referrals_receiver')
    .on('referrals')
    .columns(['receiver_customer_id', 'status'])
    .execute();

  // Clicks on a customer's referral URL, counted per day (a click is one upsert, not one row).
  await db.schema
    .createTable('referral_clicks')
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    // Days since the epoch (UTC).
    .addColumn('day', 'integer', (c) => c.notNull())
    .addColumn('clicks', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('referral_clicks_pk', ['customer_id', 'day'])
    .execute();
  await db.schema.createIndex('referral_clicks_account').on('referral_clicks').columns(['account_id', 'day']).execute();
}

/**
 * A fulfillment a referral issues has no purchase behind it: `points_purchase_id` becomes
 * nullable. PostgreSQL drops the constraint; SQLite cannot, so the table is made again with the
 * same rows, constraints and indexes (nothing references it yet).
 */
async function widenRewardFulfillments(db: Kysely<any>, pg: boolean): Promise<void> {
  if (pg) {
    await sql`alter table reward_fulfillments alter column points_purchase_id drop not null`.execute(db);
    return;
  }
  await sql`create table reward_fulfillments_new (
    id integer primary key autoincrement,
    account_id integer not null references accounts (id) on delete cascade,
    customer_id integer not null references customers (id) on delete cascade,
    points_purchase_id integer unique references points_purchases (id) on delete cascade,
    name text not null,
    code text not null,
    image_url text default '' not null,
    fulfillment_status text not null check (fulfillment_status in ('pending', 'issued', 'cancelled', 'failed')),
    usage_status text not null check (usage_status in ('used', 'unused', 'untracked')),
    created_at integer not null,
    updated_at integer not null,
    constraint reward_fulfillments_account_code unique (account_id, code)
  )`.execute(db);
  await sql`insert into reward_fulfillments_new
    (id, account_id, customer_id, points_purchase_id, name, code, image_url, fulfillment_status, usage_status,
     created_at, updated_at)
    select id, account_id, customer_id, points_purchase_id, name, code, image_url, fulfillment_status, usage_status,
     created_at, updated_at from reward_fulfillments`.execute(db);
  await sql`drop table reward_fulfillments`.execute(db);
  await sql`alter table reward_fulfillments_new rename to reward_fulfillments`.execute(db);
  await db.schema
    .createIndex('reward_fulfillments_account')
    .on('reward_fulfillments')
    .columns(['account_id', 'id'])
    .execute();
  await db.schema
    .createIndex('reward_fulfillments_customer')
    .on('reward_fulfillments')
    .columns(['customer_id', 'id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('referral_clicks').execute();
  await db.schema.dropTable('referrals').execute();
  await db.schema.dropIndex('customers_referral_code').execute();
  await db.schema.alterTable('customers').renameColumn('referral_code', 'referral_url').execute();
  await sql`update customers set referral_url = null`.execute(db);
  for (const column of [
    'sender_limit_per_30_days',
    'landing_url',
    'window_days',
    'minimum_amount',
    'qualifying_activity_token',
    'receiver_reward_points',
    'receiver_reward_fulfillment',
    'sender_reward_points',
    'sender_reward_fulfillment',
  ]) {
    await db.schema.alterTable('referral_settings').dropColumn(column).execute();
  }
}
