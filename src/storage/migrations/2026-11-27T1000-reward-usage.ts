import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Rewards after they are issued (engine-contract.md, "Rewards after they are issued"): a
// fulfillment's use and expiry, a product's lifetime for the codes it issues, and ledger entries
// that do not count as earned (a cancelled reward's refund gives points back without moving the
// customer towards a VIP tier). The ledger's trigger, which keeps `points_earned`, learns the last.

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const big = pg ? 'bigint' : 'integer';

  await db.schema.alterTable('reward_fulfillments').addColumn('used_at', big).execute();
  await db.schema.alterTable('reward_fulfillments').addColumn('expires_at', big).execute();
  await db.schema
    .alterTable('points_products')
    .addColumn('expires_after_days', 'integer', (c) => c.check(sql`expires_after_days between 1 and 3650`))
    .execute();
  await db.schema
    .alterTable('points_transactions')
    .addColumn('counts_as_earned', 'integer', (c) => c.notNull().defaultTo(1).check(sql`counts_as_earned in (0, 1)`))
    .execute();
  await replaceLedgerTrigger(db, pg, 'case when new.counts_as_earned = 1 then new.points_change else 0 end');
}

export async function down(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  await replaceLedgerTrigger(db, pg, 'new.points_change');
  await db.schema.alterTable('points_transactions').dropColumn('counts_as_earned').execute();
  await db.schema.alterTable('points_products').dropColumn('expires_after_days').execute();
  await db.schema.alterTable('reward_fulfillments').dropColumn('expires_at').execute();
  await db.schema.alterTable('reward_fulfillments').dropColumn('used_at').execute();
}

/** The ledger's trigger (see 2026-11-24T0000-points-engine), adding `earned`'s positive part to points_earned. */
async function replaceLedgerTrigger(db: Kysely<any>, pg: boolean, earned: string): Promise<void> {
  if (pg) {
    await sql`
      create or replace function loyalty_apply_points_transaction() returns trigger language plpgsql as $$
      begin
        update customers
        set points_balance = points_balance + new.points_change,
            points_earned = points_earned + greatest(${sql.raw(earned)}, 0),
            updated_at = new.created_at
        where id = new.customer_id;
        return null;
      end $$`.execute(db);
    return;
  }
  await sql`drop trigger points_transactions_apply`.execute(db);
  await sql`
    create trigger points_transactions_apply after insert on points_transactions
    begin
      update customers
      set points_balance = points_balance + new.points_change,
          points_earned = points_earned + max(${sql.raw(earned)}, 0),
          updated_at = new.created_at
      where id = new.customer_id;
    end`.execute(db);
}
