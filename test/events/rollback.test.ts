import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PointsProduct } from '../../src/points-products/schemas.js';
import { UnitOfWork, type Work } from '../../src/storage/unit-of-work.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { fixedRule, program } from '../helpers/engine.js';

// A change that does not happen has no event: refused requests, idempotent replays, and a
// transaction that fails after its change (the events are written in it, so they roll back with it).

let t: TestApp;
let a: Tenant;
let jane: number;
let token: string;
let product: number;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());
beforeEach(async () => {
  a = await createTenant(t.services);
  jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });
  ({ token } = await program(t.services, a.accountId, (tk) => [fixedRule('Order', 150, tk)]));
  const created = await t.services.pointsProducts.create(a.accountId, {
    exchange_type: 'fixed',
    points_price: 1000,
    reward: { name: '$5 off' },
  });
  product = (created as PointsProduct).id;
});

/** What a change leaves behind: the account's events, and the tier changes they would tell of. */
async function written(): Promise<{ events: number; vipTierChanges: number }> {
  const count = async (table: 'events' | 'vip_tier_changes') =>
    Number(
      (
        await t.db.kysely
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .where('account_id', '=', a.accountId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { events: await count('events'), vipTierChanges: await count('vip_tier_changes') };
}

/** Runs `act` and checks that it wrote no event (and no tier change). */
async function writesNothing(act: () => Promise<unknown>): Promise<void> {
  const before = await written();
  await act();
  expect(await written()).toEqual(before);
}

const post = (url: string, payload: object, headers: Record<string, string> = {}, key = a.apiKey) =>
  t.app.inject({ method: 'POST', url, headers: { ...bearer(key), ...headers }, payload });

describe('refused requests write no event', () => {
  it('400 invalid input', async () => {
    await writesNothing(async () => {
      expectError(
        await post('/v1/points_transactions', { points_transaction: { customer_id: jane, points_change: 0 } }),
        'invalid_parameter',
      );
      expectError(
        await post('/v1/activities', { activity: { token, customer_id: jane, customer_email: 'x@example.com' } }),
        'invalid_parameter',
      );
      expectError(
        await post('/v1/activities', { activity: { token: 'activity_unknown', customer_email: 'new@example.com' } }),
        'invalid_parameter',
      );
      expectError(
        await post(
          '/v1/customer_identities/create_or_update',
          { customer_identity: { distinct_id: 'd', email: 'not an email' } },
          {},
          a.accessToken,
        ),
        'invalid_parameter',
      );
      expectError(
        await post(`/v1/points_products/${product}/purchase`, { customer_id: 999_999_999 }),
        'invalid_parameter',
      );
      await expect(t.services.customers.setState(jane, 'asleep')).rejects.toThrow(/state/);
      await expect(t.services.vipTiers.create(a.accountId, { name: 'Again', milestone: 100 })).rejects.toThrow(
        /milestone/,
      );
    });
  });

  it('409 idempotency_key_reused, and the replay of the first request', async () => {
    const key = { 'idempotency-key': 'adjust-1' };
    const body = { points_transaction: { customer_id: jane, points_change: 150 } };
    const first = await post('/v1/points_transactions', body, key);
    expect(first.statusCode).toBe(201);
    await writesNothing(async () => {
      const replay = await post('/v1/points_transactions', body, key);
      expect(replay.statusCode).toBe(201);
      expect(replay.json()).toEqual(first.json());
      expectError(
        await post('/v1/points_transactions', { points_transaction: { customer_id: jane, points_change: 5 } }, key),
        'idempotency_key_reused',
      );
    });
  });

  it('an activity sent again (same token and distinct_id): 200, no event', async () => {
    const activity = { activity: { token, customer_email: 'new@example.com', distinct_id: 'o-1' } };
    expect((await post('/v1/activities', activity)).statusCode).toBe(201);
    await writesNothing(async () => {
      expect((await post('/v1/activities', activity)).statusCode).toBe(200);
      // Another email under the same distinct_id: the first activity, and no customer made.
      const other = { activity: { ...activity.activity, customer_email: 'other@example.com' } };
      expect((await post('/v1/activities', other)).statusCode).toBe(200);
    });
  });

  it('a purchase replayed under its Idempotency-Key: no event', async () => {
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: jane, points_change: 5000 });
    const key = { 'idempotency-key': 'buy-1' };
    expect((await post(`/v1/points_products/${product}/purchase`, { customer_id: jane }, key)).statusCode).toBe(201);
    await writesNothing(async () => {
      expect((await post(`/v1/points_products/${product}/purchase`, { customer_id: jane }, key)).statusCode).toBe(201);
    });
  });

  it('422 insufficient_points and customer_not_member', async () => {
    await writesNothing(async () => {
      expectError(await post(`/v1/points_products/${product}/purchase`, { customer_id: jane }), 'insufficient_points');
      expectError(
        await post('/v1/points_transactions', { points_transaction: { customer_id: jane, points_change: -1 } }),
        'insufficient_points',
      );
    });
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: jane, points_change: 5000 });
    await t.services.customers.setState(jane, 'disabled');
    await writesNothing(async () => {
      expectError(await post(`/v1/points_products/${product}/purchase`, { customer_id: jane }), 'customer_not_member');
    });
  });

  it('404 not_found', async () => {
    await writesNothing(async () => {
      expectError(await post('/v1/points_products/999999999/purchase', { customer_id: jane }), 'not_found');
      await expect(t.services.customers.setState(999_999_999, 'disabled')).rejects.toThrow(/does not exist/);
      await expect(t.services.vipTiers.update(999_999_999, { name: 'Gone' })).rejects.toThrow(/does not exist/);
      await expect(t.services.vipTiers.delete(999_999_999)).rejects.toThrow(/does not exist/);
    });
  });
});

describe('a transaction that fails after its change writes no event', () => {
  // The failure comes at the last instant before COMMIT: after the outbox has written the change's
  // events in the transaction (its beforeCommit callback was added first, by the change), which
  // the failing callback checks it can see, so the events are rolled back with the change.
  const failAfter = async (change: (w: Work) => Promise<unknown>) => {
    const uow = new UnitOfWork(t.db.kysely, t.clock);
    let seenInTransaction = 0;
    await expect(
      uow.run(async (w) => {
        const before = Number(
          (
            await w.trx
              .selectFrom('events')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
        await change(w);
        w.beforeCommit(async () => {
          const after = Number(
            (
              await w.trx
                .selectFrom('events')
                .select((eb) => eb.fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
          );
          seenInTransaction = after - before;
          throw new Error('forced failure after the change');
        });
      }),
    ).rejects.toThrow('forced failure');
    expect(seenInTransaction).toBeGreaterThan(0);
  };

  it('a credit that moves the customer into a tier, rolled back: no event, no tier change, no balance', async () => {
    // The same credit, committed, writes its events: what the failing one must not leave.
    const uow = new UnitOfWork(t.db.kysely, t.clock);
    const other = (await t.services.customers.create(a.accountId, { email: 'other@example.com' })).id;
    const before = await written();
    await uow.run((w) =>
      t.services.pointsTransactions.create(w, a.accountId, { customer_id: other, points_change: 150 }),
    );
    expect(await written()).toEqual({ events: before.events + 2, vipTierChanges: before.vipTierChanges + 1 });

    await writesNothing(() =>
      failAfter((w) => t.services.pointsTransactions.create(w, a.accountId, { customer_id: jane, points_change: 150 })),
    );
    expect((await t.services.customers.get(a.accountId, jane)).points_balance).toBe(0);
  });

  it('a customer made for an email, then a purchase, rolled back: no event', async () => {
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: jane, points_change: 5000 });
    await writesNothing(() =>
      failAfter(async (w) => {
        await t.services.customers.idForEmail(w, a.accountId, { email: 'new@example.com' });
        await t.services.pointsProducts.purchaseIn(w, a.accountId, product, { customer_id: jane });
      }),
    );
    expect((await t.services.customers.list(a.accountId)).map((c) => c.email)).toEqual(['jane@example.com']);
  });
});
