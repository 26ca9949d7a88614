import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Customer } from '../../src/customers/schemas.js';
import { createTenant, createTestApp, type TestApp } from '../helpers/app.js';
import { tierChangeEvents } from '../helpers/placement.js';

// VIP periods (engine-contract.md) against a small model written here, on random histories of
// about three years: credits and debits of three customers at random times, tiers created, moved
// and deleted in between, the periods job run as time passes. After every step each customer's
// tier, vip_tier_expires_at, period end, progress and deltas must be the model's, and every tier
// change must have written exactly one customer.vip_tier_changed.
//
// The model reads the rules as the contract words them, not as the service computes them: it keeps
// every credit with its time and counts them by calendar year, or walks the days ahead to find when
// a rolling tier lapses.

const DAY = 86_400_000;

type PeriodType = 'calendar_year' | 'rolling_12_months';
type Step =
  | { kind: 'credit' | 'debit'; wait: number; customer: number; points: number }
  | { kind: 'tier'; wait: number; milestone: number }
  | { kind: 'move'; wait: number; tier: number; milestone: number }
  | { kind: 'drop'; wait: number; tier: number };

interface Credit {
  customer: number;
  at: number;
  points: number;
}
interface ModelTier {
  id: number;
  milestone: number;
}
type Status = Pick<
  Customer['vip_status'],
  | 'vip_tier_id'
  | 'vip_tier_expires_at'
  | 'current_vip_period_end'
  | 'progress_value'
  | 'delta_to_retain_vip_tier'
  | 'next_vip_tier_id'
  | 'delta_to_next_vip_tier'
>;

// ---- the model --------------------------------------------------------------------------------

const yearOf = (ms: number) => new Date(ms).getUTCFullYear();
const endOfYear = (year: number) => new Date(Date.UTC(year, 11, 31, 23, 59, 59, 999)).toISOString();
const startOfDay = (ms: number) => Math.floor(ms / DAY) * DAY;

/** The date a year after `ms`'s, a 29 February's being the 28th, as the start of that day. */
function anniversary(ms: number): number {
  const d = new Date(ms);
  const next = Date.UTC(d.getUTCFullYear() + 1, d.getUTCMonth(), d.getUTCDate());
  // Date.UTC rolls 29 February of a common year over to 1 March.
  return new Date(next).getUTCMonth() === d.getUTCMonth() ? next : Date.UTC(d.getUTCFullYear() + 1, 1, 28);
}

/** "Points earned in the last 12 months" on the day starting at `day`: credits of that day or before, through their anniversary. */
const rollingOn = (credits: readonly Credit[], day: number) =>
  credits.filter((c) => startOfDay(c.at) <= day && anniversary(c.at) >= day).reduce((s, c) => s + c.points, 0);

const reached = (tiers: readonly ModelTier[], points: number) =>
  [...tiers].sort((a, b) => b.milestone - a.milestone).find((t) => t.milestone <= points);

function expected(type: PeriodType, credits: readonly Credit[], tiers: readonly ModelTier[], now: number): Status {
  let tier: ModelTier | undefined;
  let progress: number;
  let expiresAt: string | null = null;
  let retain: number | null = null;
  let periodEnd: string | null = null;
  if (type === 'calendar_year') {
    const year = yearOf(now);
    progress = credits.filter((c) => yearOf(c.at) === year).reduce((s, c) => s + c.points, 0);
    const last = credits.filter((c) => yearOf(c.at) === year - 1).reduce((s, c) => s + c.points, 0);
    const thisYears = reached(tiers, progress);
    const kept = reached(tiers, last);
    tier = kept && (!thisYears || kept.milestone > thisYears.milestone) ? kept : thisYears;
    periodEnd = endOfYear(year);
    if (tier) expiresAt = endOfYear(tier === thisYears ? year + 1 : year);
    if (tier && tier !== thisYears) retain = tier.milestone - progress;
  } else {
    const today = startOfDay(now);
    progress = rollingOn(credits, today);
    tier = reached(tiers, progress);
    if (tier && tier.milestone > 0) {
      for (let day = today + DAY; ; day += DAY) {
        const left = rollingOn(credits, day);
        if (left < tier.milestone) {
          expiresAt = new Date(day - 1).toISOString();
          retain = tier.milestone - left;
          break;
        }
      }
    }
  }
  const next = [...tiers]
    .sort((a, b) => a.milestone - b.milestone)
    .find((t) => t.milestone > progress && (!tier || t.milestone > tier.milestone));
  return {
    vip_tier_id: tier?.id ?? null,
    vip_tier_expires_at: expiresAt,
    current_vip_period_end: periodEnd,
    progress_value: progress,
    delta_to_retain_vip_tier: retain,
    next_vip_tier_id: next?.id ?? null,
    delta_to_next_vip_tier: next ? next.milestone - progress : null,
  };
}

// ---- the random histories -----------------------------------------------------------------------

const wait = fc.integer({ min: 0, max: 45 * DAY });
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('credit' as const),
      wait,
      customer: fc.nat(2),
      points: fc.integer({ min: 1, max: 800 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('debit' as const),
      wait,
      customer: fc.nat(2),
      points: fc.integer({ min: 1, max: 800 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('tier' as const), wait, milestone: fc.integer({ min: 0, max: 3000 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('move' as const),
      wait,
      tier: fc.nat(5),
      milestone: fc.integer({ min: 0, max: 3000 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), wait, tier: fc.nat(5) }) },
);
// Starts anywhere in 2026 (leap day 2028 inside every history); about 25 days a step: ~3 years.
const history = fc.record({
  start: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 31) }),
  steps: fc.array(step, { minLength: 30, maxLength: 50 }),
});

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

async function replay(type: PeriodType, start: number, steps: readonly Step[]): Promise<void> {
  t.clock.set(start);
  const { accountId } = await createTenant(t.services);
  await t.services.vipTiers.setProgramType(accountId, type);
  const customers: number[] = [];
  for (const n of [0, 1, 2]) {
    customers.push((await t.services.customers.create(accountId, { email: `c${n}@example.com` })).id);
  }
  const credits: Credit[] = [];
  const balances = [0, 0, 0];
  let tiers: ModelTier[] = [];
  const tierNow = customers.map((): number | null => null);
  let changes = 0;

  const check = async (who: readonly number[]) => {
    for (const n of who) {
      const shown = await t.services.customers.get(accountId, customers[n]!);
      const model = expected(
        type,
        credits.filter((c) => c.customer === n),
        tiers,
        t.clock.now(),
      );
      const { vip_status: status } = shown;
      expect(
        { ...status, vip_tier_id: shown.vip_tier_id },
        `customer ${n} at ${new Date(t.clock.now()).toISOString()}`,
      ).toEqual(model);
      if (model.vip_tier_id !== tierNow[n]) changes++;
      tierNow[n] = model.vip_tier_id;
    }
  };

  for (const s of steps) {
    t.clock.advance(s.wait);
    const tier = 'tier' in s ? tiers[s.tier % Math.max(tiers.length, 1)] : undefined;
    if (s.kind === 'credit' || s.kind === 'debit') {
      const points = s.kind === 'credit' ? s.points : -Math.min(s.points, balances[s.customer]!);
      if (points === 0) continue;
      await t.services.pointsTransactions.adjust(accountId, {
        customer_id: customers[s.customer]!,
        points_change: points,
      });
      balances[s.customer]! += points;
      if (points > 0) {
        credits.push({ customer: s.customer, at: t.clock.now(), points });
        // A credit places its customer at once, whatever the job did or not.
        await check([s.customer]);
      }
    } else if (s.kind === 'tier') {
      if (tiers.some((x) => x.milestone === s.milestone)) continue;
      const created = await t.services.vipTiers.create(accountId, { name: `T${s.milestone}`, milestone: s.milestone });
      tiers.push({ id: created.id, milestone: s.milestone });
    } else if (s.kind === 'move' && tier) {
      if (tiers.some((x) => x.milestone === s.milestone)) continue;
      await t.services.vipTiers.update(tier.id, { milestone: s.milestone });
      tier.milestone = s.milestone;
    } else if (s.kind === 'drop' && tier) {
      await t.services.vipTiers.delete(tier.id);
      tiers = tiers.filter((x) => x !== tier);
    }
    await t.services.vipTiers.runPass();
    await check([0, 1, 2]);
  }

  const events = await tierChangeEvents(t.db, accountId);
  expect(events.length).toBe(changes);
  for (const [n, id] of customers.entries()) {
    const mine = events.filter((change: { customer_id: number }) => change.customer_id === id);
    expect(mine.at(-1)?.current_vip_tier?.id ?? null).toBe(tierNow[n]);
  }
}

describe('VIP periods against a model', () => {
  for (const type of ['calendar_year', 'rolling_12_months'] as const) {
    it(`${type}: tier, expiry, period end, progress and deltas over three random years`, async () => {
      await fc.assert(
        fc.asyncProperty(history, ({ start, steps }) => replay(type, start, steps)),
        { numRuns: Number(process.env.PROPERTY_RUNS ?? 15), endOnFailure: !!process.env.PROPERTY_FAST },
      );
    }, 600_000);
  }
});
