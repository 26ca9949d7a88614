import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PlacementRun } from '../../src/vip-tiers/service.js';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { integersUpTo } from '../helpers/seed.js';

// A tier change places the account's customers again a batch per transaction (issue 33): more
// customers here than one batch holds, on both engines, with credits racing the batches, a
// placement that stops part-way and is finished by the periods job, and a tier deleted batch by
// batch.

let t: TestApp;
let a: Tenant;

/** More than the service's batch of 200, so that a placement takes several transactions. */
const CUSTOMERS = 1_100;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  await seedCustomers(a.accountId, CUSTOMERS);
});
afterEach(async () => t.close());

/** `count` customers, the k-th with (k · 37) mod 1,000 points earned, through the ledger. */
async function seedCustomers(accountId: number, count: number): Promise<void> {
  const db = t.db.kysely;
  const numbers = integersUpTo(t.db.dialect, count);
  const now = t.clock.now();
  await sql`insert into customers (account_id, email, email_normalized, referral_code, created_at, updated_at)
    select ${accountId}, 'c' || i || '@example.com', 'c' || i || '@example.com', 'C' || i, ${now}, ${now}
    from (${numbers}) as numbers`.execute(db);
  await sql`insert into points_transactions
      (account_id, customer_id, points_change, description, occurred_at, created_at, updated_at, counts_as_earned)
    select account_id, id, 1 + (id * 37) % 1000, 'seed', ${now}, ${now}, ${now}, 1
    from customers where account_id = ${accountId}`.execute(db);
}

/** Every customer of the account: tier and points earned. */
const customers = () =>
  t.db.kysely
    .selectFrom('customers')
    .select(['id', 'vip_tier_id', 'points_earned', 'updated_at'])
    .where('account_id', '=', a.accountId)
    .orderBy('id')
    .execute();

/** The tier the rule gives `earned` among `tiers`. */
const expectedTier = (tiers: readonly { id: number; milestone: number }[], earned: number) =>
  [...tiers].sort((x, y) => y.milestone - x.milestone).find((tier) => tier.milestone <= earned)?.id ?? null;

/** Fails unless every customer is in the tier the rule gives them, and their moves chain from no tier to it. */
async function expectPlacedWithHistory(): Promise<void> {
  const tiers = await t.services.vipTiers.list(a.accountId);
  const changes = await t.db.kysely
    .selectFrom('vip_tier_changes')
    .select(['id', 'customer_id', 'previous_vip_tier_id', 'current_vip_tier_id'])
    .where('account_id', '=', a.accountId)
    .orderBy('id')
    .execute();
  const events = await t.db.kysely
    .selectFrom('events')
    .select('data')
    .where('account_id', '=', a.accountId)
    .where('type', '=', 'customer.vip_tier_changed')
    .orderBy('id')
    .execute();
  // One event per change row (in id order within a transaction; concurrent ones interleave their ids).
  const announced = events.map((event) => Number(JSON.parse(event.data).vip_tier_change.id));
  expect(announced.sort((x, y) => x - y)).toEqual(changes.map((change) => change.id));
  const last = new Map<number, number | null>();
  for (const change of changes) {
    expect(change.previous_vip_tier_id).toBe(last.get(change.customer_id) ?? null);
    last.set(change.customer_id, change.current_vip_tier_id);
  }
  const wrong = (await customers()).filter(
    (row) =>
      row.vip_tier_id !== expectedTier(tiers, Number(row.points_earned)) ||
      (last.get(row.id) ?? null) !== row.vip_tier_id,
  );
  expect(wrong).toEqual([]);
  const account = await t.db.kysely
    .selectFrom('accounts')
    .select(['vip_program_version', 'vip_placed_version'])
    .where('id', '=', a.accountId)
    .executeTakeFirstOrThrow();
  expect(account.vip_placed_version).toBe(account.vip_program_version);
}

describe('a tier change over more customers than a batch', () => {
  it('places them a batch per transaction, telling its progress, with a change row and an event per move', async () => {
    const runs: PlacementRun[] = [];
    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 300 }, (run) =>
      runs.push(run),
    );
    expect(runs.length).toBeGreaterThanOrEqual(Math.ceil(CUSTOMERS / 200));
    expect(runs.at(-1)).toEqual({
      placed: CUSTOMERS,
      moved: (await customers()).filter((row) => row.vip_tier_id === silver.id).length,
    });
    expect(runs.map((run) => run.placed)).toEqual([...runs.map((run) => run.placed)].sort((x, y) => x - y));
    await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 800 });
    await t.services.vipTiers.update(silver.id, { milestone: 200 });
    await expectPlacedWithHistory();
  });

  it("moves no one's updated_at when a change moves no one, and a new name places no one", async () => {
    const gold = await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 5_000 });
    const before = await customers();
    t.clock.advance(60_000);
    const runs: PlacementRun[] = [];
    await t.services.vipTiers.update(gold.id, { name: 'Platinum' }, (run) => runs.push(run));
    expect(runs).toEqual([]);
    await t.services.vipTiers.update(gold.id, { milestone: 6_000 }, (run) => runs.push(run));
    expect(runs.at(-1)).toEqual({ placed: CUSTOMERS, moved: 0 });
    expect(await customers()).toEqual(before);
  });

  it('keeps every credit that races the batches, and places each customer as their points say', async () => {
    await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 300 });
    const ids = (await customers()).map((row) => row.id);
    let credits = 0;
    let placing = true;
    const racer = (async () => {
      for (let i = 0; placing || i < 20; i++) {
        const customerId = ids[(i * 97) % ids.length]!;
        await t.services.pointsTransactions.adjust(a.accountId, { customer_id: customerId, points_change: 150 });
        credits++;
      }
    })();
    await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 700 });
    placing = false;
    await racer;
    expect(credits).toBeGreaterThanOrEqual(20);
    const earned = await t.db.kysely
      .selectFrom('customers')
      .select((eb) => eb.fn.sum<number>('points_earned').as('total'))
      .where('account_id', '=', a.accountId)
      .executeTakeFirstOrThrow();
    const seeded = ids.reduce((sum, id) => sum + 1 + ((id * 37) % 1000), 0);
    expect(Number(earned.total)).toBe(seeded + credits * 150);
    await expectPlacedWithHistory();
  });

  it('is finished by the periods job when it stops part-way', async () => {
    let batches = 0;
    let placedBeforeDeath = 0;
    const failing = t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 300 }, (run) => {
      if (++batches < 2) return;
      placedBeforeDeath = run.placed;
      throw new Error('the process died');
    });
    await expect(failing).rejects.toThrow('the process died');
    const silver = (await t.services.vipTiers.list(a.accountId)).find((tier) => tier.name === 'Silver')!;
    const placed = (await customers()).filter((row) => row.vip_tier_id === silver.id).length;
    const expected = (await customers()).filter((row) => Number(row.points_earned) >= 300).length;
    expect(placed).toBeGreaterThan(0);
    expect(placed).toBeLessThan(expected);
    expect((await t.services.vipTiers.programStatus(a.accountId)).waiting).toBe(CUSTOMERS - placedBeforeDeath);

    expect(await t.services.vipTiers.runPass()).toBe(true);
    await expectPlacedWithHistory();
    expect((await t.services.vipTiers.programStatus(a.accountId)).waiting).toBe(0);
  });

  it('deletes a tier after moving its members out a batch at a time', async () => {
    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });
    const gold = await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 900 });
    const members = (await customers()).filter((row) => row.vip_tier_id === silver.id).length;
    expect(members).toBeGreaterThan(400);
    const runs: PlacementRun[] = [];
    expect(await t.services.vipTiers.delete(silver.id, (run) => runs.push(run))).toEqual({ deleted: true });
    // A batch a transaction, each of at most 200 (fewer when a batch takes longer than BATCH_MS).
    expect(runs.length).toBeGreaterThanOrEqual(Math.ceil(members / 200));
    runs.forEach((run, i) => {
      const before = runs[i - 1]?.placed ?? 0;
      expect(run.placed - before).toBeGreaterThan(0);
      expect(run.placed - before).toBeLessThanOrEqual(200);
      expect(run.moved).toBe(run.placed);
    });
    expect(runs.at(-1)).toEqual({ placed: members, moved: members });
    expect((await t.services.vipTiers.list(a.accountId)).map((tier) => tier.id)).toEqual([gold.id]);
    await expectPlacedWithHistory();
    await expect(t.services.vipTiers.delete(silver.id)).rejects.toMatchObject({ code: 'not_found' });
  });
});
