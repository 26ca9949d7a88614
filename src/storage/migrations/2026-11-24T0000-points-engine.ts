import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// The points engine (docs/engine.md): activity types, activities, the points ledger, VIP tiers,
// points settings and idempotency keys, and the customer's balance, points earned, tier and state.
//
// The balance is a column of `customers`, kept by the database itself: a trigger adds every
// inserted points transaction to its customer's `points_balance` (and its positive part to
// `points_earned`), in the statement that inserts it, so the balance equals the sum of the ledger
// whatever code writes the ledger; CHECK constraints keep both between 0 and 2^53 - 1 (the largest
// integer every client's JSON reader keeps exactly); a second trigger refuses any change to a
// transaction's customer or amount. See docs/decisions.md, "The points ledger".

/** The largest integer a JSON number keeps exactly in every client (2^53 - 1). */
const MAX_POINTS = '9007199254740991';

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  await db.schema
    .createTable('vip_tiers')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('image_url', 'text', (c) => c.notNull())
    .addColumn('milestone', big, (c) => c.notNull().check(sql`milestone >= 0`))
    .addColumn('perks', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    // One tier per milestone: "the tier with the highest milestone" is then always one tier.
    .addUniqueConstraint('vip_tiers_account_milestone', ['account_id', 'milestone'])
    .execute();

  await db.schema
    .alterTable('customers')
    .addColumn('state', 'text', (c) =>
      c.notNull().defaultTo('member').check(sql`state in ('candidate', 'member', 'disabled')`),
    )
    .execute();
  await db.schema
    .alterTable('customers')
    .addColumn('points_balance', big, (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`points_balance between 0 and ${sql.raw(MAX_POINTS)}`),
    )
    .execute();
  await db.schema
    .alterTable('customers')
    .addColumn('points_earned', big, (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`points_earned between 0 and ${sql.raw(MAX_POINTS)}`),
    )
    .execute();
  await db.schema
    .alterTable('customers')
    .addColumn('vip_tier_id', ref, (c) => c.references('vip_tiers.id').onDelete('set null'))
    .execute();
  await db.schema.alterTable('customers').addColumn('date_of_birth', 'text').execute();
  await db.schema.alterTable('customers').addColumn('referral_url', 'text').execute();
  // The customers page: where account_id = ? [and filters] and id < ? order by id desc.
  await db.schema.createIndex('customers_account_id').on('customers').columns(['account_id', 'id']).execute();

  await db.schema
    .createTable('activity_types')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('token', 'text', (c) => c.notNull())
    .addColumn('created_at', big, (c) => c.notNull())
    .addUniqueConstraint('activity_types_account_token', ['account_id', 'token'])
    .execute();

  await db.schema
    .alterTable('earning_rules')
    .addColumn('activity_type_id', ref, (c) => c.references('activity_types.id').onDelete('set null'))
    .execute();
  // Evaluation: the enabled rules bound to one activity type, in ascending id.
  await db.schema
    .createIndex('earning_rules_activity_type')
    .on('earning_rules')
    .columns(['activity_type_id', 'id'])
    .execute();

  await db.schema
    .createTable('activities')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('activity_type_id', ref, (c) => c.notNull().references('activity_types.id').onDelete('cascade'))
    .addColumn('distinct_id', 'text')
    .addColumn('properties', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_on_origin_at', big)
    /** The activity's time: created_on_origin_at, or when it was received. */
    .addColumn('occurred_at', big, (c) => c.notNull())
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    // Idempotency: one activity per token and distinct_id (NULLs are distinct: no distinct_id, no check).
    .addUniqueConstraint('activities_account_type_distinct_id', ['account_id', 'activity_type_id', 'distinct_id'])
    .execute();
  await db.schema.createIndex('activities_customer').on('activities').columns(['customer_id', 'id']).execute();

  await db.schema
    .createTable('points_transactions')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('points_change', big, (c) =>
      c
        .notNull()
        .check(sql`points_change <> 0 and points_change between -${sql.raw(MAX_POINTS)} and ${sql.raw(MAX_POINTS)}`),
    )
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('internal_note', 'text')
    .addColumn('activity_id', ref, (c) => c.references('activities.id').onDelete('cascade'))
    /** The earning rule that credited it: what earning limits count. */
    .addColumn('earning_rule_id', ref, (c) => c.references('earning_rules.id').onDelete('set null'))
    /** The time limits measure: the activity's time for a credit, the creation time otherwise. */
    .addColumn('occurred_at', big, (c) => c.notNull())
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('points_transactions_account')
    .on('points_transactions')
    .columns(['account_id', 'id'])
    .execute();
  await db.schema
    .createIndex('points_transactions_customer')
    .on('points_transactions')
    .columns(['customer_id', 'id'])
    .execute();
  // Earning limits: count(*) where customer_id = ? and earning_rule_id = ? [and occurred_at in a window].
  await db.schema
    .createIndex('points_transactions_limits')
    .on('points_transactions')
    .columns(['customer_id', 'earning_rule_id', 'occurred_at'])
    .execute();
  await db.schema.createIndex('points_transactions_activity').on('points_transactions').column('activity_id').execute();

  await db.schema
    .createTable('points_settings')
    .addColumn('account_id', ref, (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('label_one', 'text', (c) => c.notNull())
    .addColumn('label_other', 'text', (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    /** SHA-256 of the route and the canonical JSON of the body: the same key with another body is refused. */
    .addColumn('request_hash', 'text', (c) => c.notNull())
    /** Null while the first request is being answered (its transaction has not committed). */
    .addColumn('status', 'integer')
    .addColumn('body', 'text')
    .addColumn('created_at', big, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'key'])
    .execute();
  // Purging the keys past their 24 hours.
  await db.schema.createIndex('idempotency_keys_created').on('idempotency_keys').column('created_at').execute();

  // The cursor HMAC key, made now rather than by the first list request: that request would
  // otherwise write (and wait for the write lock) on its way to reading. Kept if it exists.
  await db
    .insertInto('server_secrets')
    .values({ name: 'cursor_hmac_key', value: randomBytes(32).toString('base64'), created_at: Date.now() })
    .onConflict((oc: any) => oc.column('name').doNothing())
    .execute();

  if (pg) {
    await sql`
      create function loyalty_apply_points_transaction() returns trigger language plpgsql as $$
      begin
        update customers
        set points_balance = points_balance + new.points_change,
            points_earned = points_earned + greatest(new.points_change, 0),
            updated_at = new.created_at
        where id = new.customer_id;
        return null;
      end $$`.execute(db);
    await sql`
      create trigger points_transactions_apply after insert on points_transactions
      for each row execute function loyalty_apply_points_transaction()`.execute(db);
    await sql`
      create function loyalty_refuse_points_change() returns trigger language plpgsql as $$
      begin
        raise exception 'points transactions are immutable: post a new one instead';
      end $$`.execute(db);
    await sql`
      create trigger points_transactions_immutable before update of customer_id, points_change on points_transactions
      for each row execute function loyalty_refuse_points_change()`.execute(db);
  } else {
    await sql`
      create trigger points_transactions_apply after insert on points_transactions
      begin
        update customers
        set points_balance = points_balance + new.points_change,
            points_earned = points_earned + max(new.points_change, 0),
            updated_at = new.created_at
        where id = new.customer_id;
      end`.execute(db);
    await sql`
      create trigger points_transactions_immutable before update of customer_id, points_change on points_transactions
      begin
        select raise(abort, 'points transactions are immutable: post a new one instead');
      end`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.dropTable('points_settings').execute();
  await db.schema.dropTable('points_transactions').execute();
  await db.schema.dropTable('activities').execute();
  if (pg) {
    await sql`drop function loyalty_apply_points_transaction()`.execute(db);
    await sql`drop function loyalty_refuse_points_change()`.execute(db);
  }
  await db.schema.dropIndex('earning_rules_activity_type').execute();
  await db.schema.alterTable('earning_rules').dropColumn('activity_type_id').execute();
  await db.schema.dropTable('activity_types').execute();
  await db.schema.dropIndex('customers_account_id').execute();
  for (const column of ['referral_url', 'date_of_birth', 'vip_tier_id', 'points_earned', 'points_balance', 'state']) {
    await db.schema.alterTable('customers').dropColumn(column).execute();
  }
  await db.schema.dropTable('vip_tiers').execute();
}
