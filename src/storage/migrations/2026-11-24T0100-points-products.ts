import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Spending points (docs/engine.md): rewards, the points products that sell them, purchases, and
// the reward fulfillments (discount codes) a purchase issues. A purchase's points transaction
// names it (points_transactions.points_purchase_id).

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  await db.schema
    .createTable('rewards')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('image_url', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('points_products')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('reward_id', ref, (c) => c.notNull().unique().references('rewards.id').onDelete('cascade'))
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('exchange_type', 'text', (c) => c.notNull().check(sql`exchange_type in ('fixed', 'variable')`))
    .addColumn('points_price', big)
    .addColumn('variable_points_step', big)
    .addColumn('variable_points_step_reward_value', big)
    .addColumn('variable_points_min', big)
    .addColumn('variable_points_max', big)
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    // Each exchange type has its own fields, and only those.
    .addCheckConstraint(
      'points_products_exchange_fields',
      sql`(exchange_type = 'fixed' and points_price > 0 and variable_points_step is null
            and variable_points_step_reward_value is null and variable_points_min is null and variable_points_max is null)
        or (exchange_type = 'variable' and points_price is null and variable_points_step > 0
            and variable_points_step_reward_value > 0 and variable_points_min >= variable_points_step
            and variable_points_max >= variable_points_min)`,
    )
    .execute();
  // The list: where account_id = ? and enabled = 1 [and exchange_type = ?] and id < ? order by id desc.
  await db.schema
    .createIndex('points_products_page')
    .on('points_products')
    .columns(['account_id', 'enabled', 'id'])
    .execute();

  await db.schema
    .createTable('points_purchases')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('points_product_id', ref, (c) => c.notNull().references('points_products.id').onDelete('cascade'))
    .addColumn('points_spent', big, (c) => c.notNull().check(sql`points_spent > 0`))
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('points_purchases_customer')
    .on('points_purchases')
    .columns(['customer_id', 'id'])
    .execute();

  await db.schema
    .createTable('reward_fulfillments')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('points_purchase_id', ref, (c) =>
      c.notNull().unique().references('points_purchases.id').onDelete('cascade'),
    )
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('image_url', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('fulfillment_status', 'text', (c) =>
      c.notNull().check(sql`fulfillment_status in ('pending', 'issued', 'cancelled', 'failed')`),
    )
    .addColumn('usage_status', 'text', (c) => c.notNull().check(sql`usage_status in ('used', 'unused', 'untracked')`))
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .addUniqueConstraint('reward_fulfillments_account_code', ['account_id', 'code'])
    .execute();
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

  await db.schema
    .alterTable('points_transactions')
    .addColumn('points_purchase_id', ref, (c) => c.references('points_purchases.id').onDelete('cascade'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('points_transactions').dropColumn('points_purchase_id').execute();
  for (const table of ['reward_fulfillments', 'points_purchases', 'points_products', 'rewards']) {
    await db.schema.dropTable(table).execute();
  }
}
