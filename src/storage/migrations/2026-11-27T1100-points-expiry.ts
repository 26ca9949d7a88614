import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Points expiry (engine-contract.md, "Points expiry"): the account's setting, and for every
// customer when they were last active (their last points transaction or activity) and for which
// of those times they were reminded. The database keeps last_active_at itself, as it keeps the
// balance: the ledger's trigger and one on activities set it in the statement that inserts them,
// whatever code writes them. Existing customers are brought up to date here.

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const big = pg ? 'bigint' : 'integer';

  await db.schema
    .alterTable('points_settings')
    .addColumn('expiry_inactivity_days', 'integer', (c) => c.check(sql`expiry_inactivity_days between 30 and 1825`))
    .execute();
  await db.schema.alterTable('customers').addColumn('last_active_at', big).execute();
  await db.schema.alterTable('customers').addColumn('expiry_reminded_for', big).execute();
  await sql`
    update customers set last_active_at = (
      select max(t) from (
        select max(created_at) as t from points_transactions where customer_id = customers.id
        union all
        select max(created_at) as t from activities where customer_id = customers.id
      ) as times
    )`.execute(db);
  // Not indexed: last_active_at changes with every points transaction, and an index on it would
  // make each of those updates of the customer's row a non-HOT one on PostgreSQL (every index of
  // the table written again). The expiring job reads an account's customers in id order instead.

  await replaceLedgerTrigger(db, pg, `,\n${TOUCH}`);
  if (pg) {
    await sql`
      create function loyalty_touch_customer() returns trigger language plpgsql as $$
      begin
        update customers set ${sql.raw(TOUCH)} where id = new.customer_id;
        return null;
      end $$`.execute(db);
    await sql`
      create trigger activities_touch_customer after insert on activities
      for each row execute function loyalty_touch_customer()`.execute(db);
    return;
  }
  await sql`
    create trigger activities_touch_customer after insert on activities
    begin
      update customers set ${sql.raw(TOUCH)} where id = new.customer_id;
    end`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  await sql`drop trigger activities_touch_customer${sql.raw(pg ? ' on activities' : '')}`.execute(db);
  if (pg) await sql`drop function loyalty_touch_customer()`.execute(db);
  await replaceLedgerTrigger(db, pg, '');
  await db.schema.alterTable('customers').dropColumn('expiry_reminded_for').execute();
  await db.schema.alterTable('customers').dropColumn('last_active_at').execute();
  await db.schema.alterTable('points_settings').dropColumn('expiry_inactivity_days').execute();
}

/** A customer's last activity moved to the inserted row's time, never back. */
const TOUCH = 'last_active_at = case when last_active_at > new.created_at then last_active_at else new.created_at end';

/**
 * The ledger's trigger as 2026-11-27T1000-reward-usage left it (counted credits added to
 * points_earned), setting `extra` too.
 */
async function replaceLedgerTrigger(db: Kysely<any>, pg: boolean, extra: string): Promise<void> {
  const earned = 'case when new.counts_as_earned = 1 then new.points_change else 0 end';
  if (pg) {
    await sql`
      create or replace function loyalty_apply_points_transaction() returns trigger language plpgsql as $$
      begin
        update customers
        set points_balance = points_balance + new.points_change,
            points_earned = points_earned + greatest(${sql.raw(earned)}, 0),
            updated_at = new.created_at${sql.raw(extra)}
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
          updated_at = new.created_at${sql.raw(extra)}
      where id = new.customer_id;
    end`.execute(db);
}
