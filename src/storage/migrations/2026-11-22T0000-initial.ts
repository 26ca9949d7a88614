import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Typed Kysely<any> and free of app imports: a migration must keep working as the app changes.
// The schema covers the whole v1 spec. Ids are 64-bit on PostgreSQL (bigserial) and SQLite's
// rowid alias (integer primary key autoincrement) on SQLite; times are epoch milliseconds.

export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const time = pg ? 'bigint' : 'integer';
  const number = pg ? 'double precision' : 'real';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  await db.schema
    .createTable('accounts')
    .addColumn('id', id, primaryId)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('key_prefix', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('revoked_at', time)
    .execute();
  await db.schema.createIndex('api_keys_account').on('api_keys').column('account_id').execute();

  await db.schema
    .createTable('apps')
    .addColumn('id', id, primaryId)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull().unique())
    .addColumn('client_secret_hash', 'text')
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('redirect_uris', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('access_tokens')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('app_id', ref, (c) => c.notNull().references('apps.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('token_prefix', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('expires_at', time, (c) => c.notNull())
    .addColumn('revoked_at', time)
    .execute();
  await db.schema
    .createIndex('access_tokens_account_app')
    .on('access_tokens')
    .columns(['account_id', 'app_id'])
    .execute();

  await db.schema
    .createTable('customers')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_normalized', 'text', (c) => c.notNull())
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .addUniqueConstraint('customers_account_email', ['account_id', 'email_normalized'])
    .execute();

  await db.schema
    .createTable('customer_identities')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('distinct_id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('properties', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .addUniqueConstraint('customer_identities_account_distinct_id', ['account_id', 'distinct_id'])
    .execute();
  await db.schema.createIndex('customer_identities_customer').on('customer_identities').column('customer_id').execute();

  await db.schema
    .createTable('referral_settings')
    .addColumn('account_id', ref, (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('active', 'inactive')`))
    .addColumn('sender_reward_name', 'text', (c) => c.notNull())
    .addColumn('sender_reward_image_url', 'text', (c) => c.notNull())
    .addColumn('sender_reward_image_content_type', 'text')
    .addColumn('receiver_reward_name', 'text', (c) => c.notNull())
    .addColumn('receiver_reward_image_url', 'text', (c) => c.notNull())
    .addColumn('receiver_reward_image_content_type', 'text')
    .addColumn('updated_at', time, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('earning_rules')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('image_url', 'text', (c) => c.notNull())
    .addColumn('action_text', 'text')
    .addColumn('action_url', 'text')
    .addColumn('restricted_to_vip_tier_ids', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('reward_type', 'text', (c) => c.notNull())
    .addColumn('reward_value_type', 'text', (c) => c.notNull().check(sql`reward_value_type in ('variable', 'fixed')`))
    .addColumn('reward_value', number, (c) => c.notNull())
    .addColumn('reward_per_amount', number)
    .addColumn('earning_limit_type', 'text', (c) => c.check(sql`earning_limit_type in ('rolling', 'lifetime')`))
    .addColumn('earning_limit_max', 'integer')
    .addColumn('earning_limit_unit', 'text')
    .addColumn('earning_limit_unit_count', 'integer')
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .execute();
  // Serves the page query: where account_id = ? and enabled = 1 and id < ? order by id desc.
  await db.schema
    .createIndex('earning_rules_page')
    .on('earning_rules')
    .columns(['account_id', 'enabled', 'id desc'])
    .execute();

  await db.schema
    .createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'server_secrets',
    'earning_rules',
    'referral_settings',
    'customer_identities',
    'customers',
    'access_tokens',
    'apps',
    'api_keys',
    'accounts',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
