import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { integersUpTo } from './seed.js';

// What the tier placement tests share (an all-time program): customers with points earned
// seeded through the ledger in one statement, and the check that every customer ended in the
// tier their points give them, with a chain of change rows and one event per change.

/** `count` customers of the account, the k-th with 1 + (id · 37) mod 1,000 points earned, through the ledger. */
export async function seedEarners(db: Db, accountId: number, count: number, now: number): Promise<void> {
  const numbers = integersUpTo(db.dialect, count);
  await sql`insert into customers (account_id, email, email_normalized, referral_code, created_at, updated_at)
    select ${accountId}, 'c' || i || '@example.com', 'c' || i || '@example.com', 'C' || i, ${now}, ${now}
    from (${numbers}) as numbers`.execute(db.kysely);
  await sql`insert into points_transactions
      (account_id, customer_id, points_change, description, occurred_at, created_at, updated_at, counts_as_earned)
    select account_id, id, 1 + (id * 37) % 1000, 'seed', ${now}, ${now}, ${now}, 1
    from customers where account_id = ${accountId}`.execute(db.kysely);
}

/** The points a customer seeded by seedEarners earned there. */
export const seededPoints = (id: number) => 1 + ((id * 37) % 1000);

/** Every customer of the account: tier and points earned, in id order. */
export const placements = (db: Db, accountId: number) =>
  db.kysely
    .selectFrom('customers')
    .select(['id', 'vip_tier_id', 'points_earned', 'updated_at'])
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();

/** The `vip_tier_change` of each `customer.vip_tier_changed` event of the account, in event order. */
export async function tierChangeEvents(db: Db, accountId: number): Promise<any[]> {
  const events = await db.kysely
    .selectFrom('events')
    .select('data')
    .where('account_id', '=', accountId)
    .where('type', '=', 'customer.vip_tier_changed')
    .orderBy('id')
    .execute();
  return events.map((event) => JSON.parse(event.data).vip_tier_change);
}

/** The tier an all-time program of `tiers` gives `earned` points. */
const expectedTier = (tiers: readonly { id: number; milestone: number }[], earned: number) =>
  [...tiers].sort((x, y) => y.milestone - x.milestone).find((tier) => tier.milestone <= earned)?.id ?? null;

/**
 * Fails unless every customer of the account is in the tier its points earned give it, its
 * change rows chain from no tier to that one, each change row has its one
 * `customer.vip_tier_changed` event, and the account's placement is marked current.
 */
export async function expectPlacedWithHistory(db: Db, accountId: number): Promise<void> {
  const tiers = await db.kysely
    .selectFrom('vip_tiers')
    .select(['id', 'milestone'])
    .where('account_id', '=', accountId)
    .execute();
  const changes = await db.kysely
    .selectFrom('vip_tier_changes')
    .select(['id', 'customer_id', 'previous_vip_tier_id', 'current_vip_tier_id'])
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
  // One event per change row (in id order within a transaction; concurrent ones interleave their ids).
  const announced = (await tierChangeEvents(db, accountId)).map((change) => Number(change.id));
  expect(announced.sort((x, y) => x - y)).toEqual(changes.map((change) => change.id));
  const last = new Map<number, number | null>();
  for (const change of changes) {
    expect(change.previous_vip_tier_id).toBe(last.get(change.customer_id) ?? null);
    last.set(change.customer_id, change.current_vip_tier_id);
  }
  const wrong = (await placements(db, accountId)).filter(
    (row) =>
      row.vip_tier_id !== expectedTier(tiers, Number(row.points_earned)) ||
      (last.get(row.id) ?? null) !== row.vip_tier_id,
  );
  expect(wrong).toEqual([]);
  const account = await db.kysely
    .selectFrom('accounts')
    .select(['vip_program_version', 'vip_placed_version'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  expect(account.vip_placed_version).toBe(account.vip_program_version);
}
