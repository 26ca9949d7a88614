import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PlacementRun } from '../../src/vip-tiers/service.js';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import {
  expectPlacedWithHistory as expectPlaced,
  placements,
  seedEarners,
  seededPoints,
} from '../helpers/placement.js';

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
  await seedEarners(t.db, a.accountId, CUSTOMERS, t.clock.now());
});
afterEach(async () => t.close());

/** Every customer of the account: tier and points earned. */
const customers = () => placements(t.db, a.accountId);

const expectPlacedWithHistory = () => expectPlaced(t.db, a.accountId);

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
    const seeded = ids.reduce((sum, id) => sum + seededPoints(id), 0);
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
