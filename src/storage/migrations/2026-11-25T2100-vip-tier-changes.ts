import type { Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

// A customer's moves between VIP tiers (the reference's VipTierChange): one row per move, written
// in the transaction that moved them, so that the `customer.vip_tier_changed` event it causes has
// an id of its own. The tier ids are kept without a foreign key: a deleted tier's moves stay.

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  await db.schema
    .createTable('vip_tier_changes')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('previous_vip_tier_id', ref)
    .addColumn('current_vip_tier_id', ref)
    .addColumn('created_at', big, (c) => c.notNull())
    .execute();
  // A customer's moves, newest first (and the foreign key's lookups when a customer goes).
  await db.schema
    .createIndex('vip_tier_changes_customer')
    .on('vip_tier_changes')
    .columns(['customer_id', 'id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('vip_tier_changes').execute();
}
