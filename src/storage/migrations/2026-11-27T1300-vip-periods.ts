import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// VIP periods (engine-contract.md, "VIP periods"): the account's VIP program type, what each
// customer's placement in a period program came to (progress, expiry, the period's end, what
// keeps the tier, when time alone changes it, the program version it was made for), and the points
// each customer earned on each UTC day, which a period program's progress is summed from.
//
// The database keeps the daily earnings itself, as it keeps points_earned: the ledger's trigger
// adds each counted credit to its day in the statement that inserts it, whatever the program's
// type, so that a program changed to a period type finds the history it needs. Existing ledgers are
// summed here. None of the new customer columns is indexed (every credit writes them: an index
// would make those updates non-HOT on PostgreSQL); the periods job reads customers in id order.

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const big = pg ? 'bigint' : 'integer';
  const ref = pg ? 'bigint' : 'integer';

  await db.schema
    .alterTable('accounts')
    .addColumn('vip_program', 'text', (c) =>
      c.notNull().defaultTo('all_time').check(sql`vip_program in ('all_time', 'calendar_year', 'rolling_12_months')`),
    )
    .execute();
  await db.schema
    .alterTable('accounts')
    .addColumn('vip_program_version', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  for (const [column, type, notNull] of [
    ['vip_progress', big, true],
    ['vip_tier_expires_at', big, false],
    ['vip_period_end', big, false],
    ['vip_retain_delta', big, false],
    ['vip_recheck_at', big, false],
    ['vip_program_version', 'integer', true],
  ] as const) {
    await db.schema
      .alterTable('customers')
      .addColumn(column, type, (c) => (notNull ? c.notNull().defaultTo(0) : c))
      .execute();
  }

  await db.schema
    .createTable('vip_earnings')
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    /** Days since 1970-01-01, UTC. */
    .addColumn('day', 'integer', (c) => c.notNull())
    .addColumn('points', big, (c) => c.notNull().check(sql`points > 0`))
    .addPrimaryKeyConstraint('vip_earnings_pkey', ['customer_id', 'day'])
    .execute();
  await sql`
    insert into vip_earnings (customer_id, day, points)
    select customer_id, created_at / ${sql.raw(String(DAY_MS))}, sum(points_change)
    from points_transactions
    where counts_as_earned = 1 and points_change > 0
    group by customer_id, created_at / ${sql.raw(String(DAY_MS))}`.execute(db);

  await replaceLedgerTrigger(db, pg, EARN);
}

export async function down(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  await replaceLedgerTrigger(db, pg, '');
  await db.schema.dropTable('vip_earnings').execute();
  for (const column of [
    'vip_program_version',
    'vip_recheck_at',
    'vip_retain_delta',
    'vip_period_end',
    'vip_tier_expires_at',
    'vip_progress',
  ]) {
    await db.schema.alterTable('customers').dropColumn(column).execute();
  }
  await db.schema.alterTable('accounts').dropColumn('vip_program_version').execute();
  await db.schema.alterTable('accounts').dropColumn('vip_program').execute();
}

const DAY_MS = 86_400_000;

/** The counted part of a credit added to its customer's day. */
const EARN = `
      insert into vip_earnings (customer_id, day, points)
      select new.customer_id, new.created_at / ${DAY_MS}, new.points_change
      where new.counts_as_earned = 1 and new.points_change > 0
      on conflict (customer_id, day) do update set points = vip_earnings.points + excluded.points;`;

/**
 * The ledger's trigger as 2026-11-27T1100-points-expiry left it (balance, points earned,
 * updated_at, last_active_at), then `extra`.
 */
async function replaceLedgerTrigger(db: Kysely<any>, pg: boolean, extra: string): Promise<void> {
  const earned = 'case when new.counts_as_earned = 1 then new.points_change else 0 end';
  const touch =
    'last_active_at = case when last_active_at > new.created_at then last_active_at else new.created_at end';
  if (pg) {
    await sql`
      create or replace function loyalty_apply_points_transaction() returns trigger language plpgsql as $$
      begin
        update customers
        set points_balance = points_balance + new.points_change,
            points_earned = points_earned + greatest(${sql.raw(earned)}, 0),
            updated_at = new.created_at,
            ${sql.raw(touch)}
        where id = new.customer_id;${sql.raw(extra)}
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
          updated_at = new.created_at,
          ${sql.raw(touch)}
      where id = new.customer_id;${sql.raw(extra)}
    end`.execute(db);
}
