import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type Tenant, type TestApp, testEngine } from '../helpers/app.js';
import { tierChangeEvents } from '../helpers/placement.js';
import { eventually } from '../helpers/wait.js';

// A credit that places its customer in a tier while the tier's deletion commits (PostgreSQL: on
// SQLite a transaction holds the database's write lock, so the two cannot overlap). The credit's
// foreign key waits on the deletion's lock of the tier row, then fails with 23503 once the tier is
// gone: the unit of work runs the credit again, and the second run places the customer by the
// tiers left. docs/engine.md tells the race; test/reliability/placement-races.test.ts meets it
// between real processes only when its timing falls that way, this test every time.

let t: TestApp;
let a: Tenant;
let deletion: pg.Client;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  deletion = new pg.Client({ connectionString: t.url });
  await deletion.connect();
});
afterEach(async () => {
  await deletion.end();
  await t.close();
});

/** Whether a backend waits for a lock `pid` holds. */
const blockedBy = async (pid: number) =>
  (
    await sql<{ pid: number }>`select pid from pg_stat_activity where ${pid} = any(pg_blocking_pids(pid))`.execute(
      t.db.kysely,
    )
  ).rows.length > 0;

describe.runIf(testEngine === 'postgres')('a credit racing the deletion of the tier it places in', () => {
  it('waits for the deletion, runs again, and places the customer by the tiers left', async () => {
    const customer = await t.services.customers.create(a.accountId, { email: 'jane@example.com' });
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: customer.id, points_change: 50 });
    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });

    // The last transaction of Silver's deletion, as VipTiersService.delete runs it: the tier row
    // locked (lockTier), no member left, the row deleted; held open until the credit waits on it.
    const { rows } = await deletion.query<{ pid: number }>('select pg_backend_pid() as pid');
    await deletion.query('begin');
    await deletion.query('select id from vip_tiers where id = $1 for update', [silver.id]);
    const credit = t.services.pointsTransactions.adjust(a.accountId, { customer_id: customer.id, points_change: 100 });
    expect(await eventually(() => blockedBy(rows[0]!.pid), 10_000, 20)).toBe(true);
    await deletion.query('delete from vip_tiers where id = $1', [silver.id]);
    await deletion.query('commit');

    await credit;
    const row = await t.db.kysely
      .selectFrom('customers')
      .select(['vip_tier_id', 'points_earned', 'points_balance'])
      .where('id', '=', customer.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ vip_tier_id: null, points_balance: 150 });
    expect(Number(row.points_earned)).toBe(150);
    // The first run's move into Silver was rolled back with it: no change row, no event.
    const changes = await t.db.kysely
      .selectFrom('vip_tier_changes')
      .select('current_vip_tier_id')
      .where('customer_id', '=', customer.id)
      .execute();
    expect(changes).toEqual([]);
    expect(await tierChangeEvents(t.db, a.accountId)).toEqual([]);
  });
});
