import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Activity } from '../../src/activities/schemas.js';
import type { Customer } from '../../src/customers/schemas.js';
import { bearer, createTenant, createTestApp, type TestApp, testEngine } from '../helpers/app.js';
import { unbalancedCustomers } from '../helpers/engine.js';
import { earningRuleFixture } from '../helpers/fixtures.js';
import { fullestWindowWith } from './rolling-reference.js';

// The engine against a small reference model written here, on random programs: rules fixed and
// variable (decimal values and amounts with up to 4 places), lifetime and rolling limits in every
// unit, VIP restrictions and tiers, and activities at instants around month ends, year ends and
// leap days, sent out of time order. After every activity the credits the service answers must
// be the model's, and at the end every balance and tier.

type Unit = 'day' | 'week' | 'month' | 'year';
type Limit = null | { type: 'lifetime'; max: number } | { type: 'rolling'; max: number; unit: Unit; count: number };

interface RuleSpec {
  reward: { fixed: string } | { value: string; per: string };
  limit: Limit;
  /** Indexes into the program's tiers; [] means every tier. */
  tiers: number[];
}

interface ActivitySpec {
  customer: number;
  time: number;
  amount: { text: string; asNumber: boolean };
}

// ---- the reference model ----------------------------------------------------------------------

/** A decimal numeral as a fraction of integers. */
function fraction(text: string): { n: bigint; d: bigint } {
  const [whole, part = ''] = text.split('.');
  return { n: BigInt(whole! + part), d: 10n ** BigInt(part.length) };
}

function pointsOf(rule: RuleSpec, amount: string): number {
  if ('fixed' in rule.reward) return Number(fraction(rule.reward.fixed).n / fraction(rule.reward.fixed).d);
  const v = fraction(rule.reward.value);
  const a = fraction(amount);
  const p = fraction(rule.reward.per);
  return Number((v.n * a.n * p.d) / (v.d * a.d * p.n));
}

class Model {
  readonly credits: { customer: number; rule: number; time: number }[] = [];
  readonly earned = new Map<number, number>();

  constructor(
    private readonly rules: RuleSpec[],
    private readonly milestones: number[],
  ) {}

  /** The tier index of `customer`, or null. */
  tier(customer: number): number | null {
    const earned = this.earned.get(customer) ?? 0;
    let best: number | null = null;
    this.milestones.forEach((milestone, index) => {
      if (milestone <= earned && (best === null || milestone > this.milestones[best]!)) best = index;
    });
    return best;
  }

  /** The credits of one activity, as [rule index, points]. */
  record(activity: ActivitySpec): [number, number][] {
    const tierBefore = this.tier(activity.customer);
    const out: [number, number][] = [];
    this.rules.forEach((rule, index) => {
      if (rule.tiers.length > 0 && (tierBefore === null || !rule.tiers.includes(tierBefore))) return;
      const limit = rule.limit;
      if (limit !== null) {
        const mine = this.credits.filter((c) => c.customer === activity.customer && c.rule === index);
        // A rolling limit holds for every window that would hold this activity (rolling-reference.ts).
        const counted =
          limit.type === 'lifetime'
            ? mine.length
            : fullestWindowWith(
                activity.time,
                mine.map((c) => c.time),
                limit.unit,
                limit.count,
              );
        if (counted >= limit.max) return;
      }
      const points = pointsOf(rule, activity.amount.text);
      if (points < 1) return;
      this.credits.push({ customer: activity.customer, rule: index, time: activity.time });
      this.earned.set(activity.customer, (this.earned.get(activity.customer) ?? 0) + points);
      out.push([index, points]);
    });
    return out;
  }
}

// ---- the arbitraries --------------------------------------------------------------------------

/** A decimal numeral with up to `places` places, from `min` to `max` units of its last place. */
const decimal = (places: number, min: number, max: number) =>
  fc.tuple(fc.integer({ min, max }), fc.integer({ min: 0, max: places })).map(([units, scale]) => {
    const text = String(units).padStart(scale + 1, '0');
    return scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`;
  });

const limitArb: fc.Arbitrary<Limit> = fc.oneof(
  fc.constant(null),
  fc.record({ type: fc.constant('lifetime' as const), max: fc.integer({ min: 1, max: 3 }) }),
  fc.record({
    type: fc.constant('rolling' as const),
    max: fc.integer({ min: 1, max: 3 }),
    unit: fc.constantFrom<Unit>('day', 'week', 'month', 'year'),
    count: fc.integer({ min: 1, max: 3 }),
  }),
);

const ruleArb = (tierCount: number): fc.Arbitrary<RuleSpec> =>
  fc.record({
    reward: fc.oneof(
      fc.record({ fixed: decimal(2, 1, 50_000) }),
      fc.record({ value: decimal(4, 1, 5_000), per: fc.constantFrom('0.01', '0.25', '1', '3', '7.5', '10', '0.0003') }),
    ),
    limit: limitArb,
    tiers: tierCount === 0 ? fc.constant([]) : fc.subarray([...Array(tierCount).keys()]),
  });

// Instants on both sides of month ends, year ends and leap days.
const DAYS = [
  '2023-02-28',
  '2023-03-28',
  '2023-03-31',
  '2023-12-31',
  '2024-01-01',
  '2024-01-29',
  '2024-01-31',
  '2024-02-28',
  '2024-02-29',
  '2024-03-01',
  '2024-03-29',
  '2024-03-31',
  '2024-04-30',
  '2024-12-31',
  '2025-01-01',
  '2025-02-28',
  '2025-03-01',
  '2025-03-31',
].map((day) => Date.parse(`${day}T00:00:00Z`));

const timeArb = fc
  .tuple(fc.constantFrom(...DAYS), fc.constantFrom(0, 1, 43_200_000, 86_399_999, 86_400_000, -1))
  .map(([day, offset]) => day + offset);

const activityArb = (customers: number): fc.Arbitrary<ActivitySpec> =>
  fc.record({
    customer: fc.integer({ min: 0, max: customers - 1 }),
    time: timeArb,
    amount: fc.record({ text: decimal(4, 0, 1_000_000), asNumber: fc.boolean() }),
  });

const programArb = fc
  .record({
    milestones: fc.uniqueArray(fc.integer({ min: 0, max: 3000 }), { maxLength: 3 }),
    customers: fc.integer({ min: 1, max: 2 }),
  })
  .chain(({ milestones, customers }) =>
    fc.record({
      milestones: fc.constant(milestones),
      rules: fc.array(ruleArb(milestones.length), { minLength: 1, maxLength: 4 }),
      activities: fc.array(activityArb(customers), { minLength: 1, maxLength: 12 }),
      customers: fc.constant(customers),
    }),
  );

// ---- the property -----------------------------------------------------------------------------

describe(`activity evaluation against a reference model (${testEngine})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  it('credits exactly what the model credits, activity by activity, and ends with its balances and tiers', async () => {
    await fc.assert(
      fc.asyncProperty(programArb, async ({ milestones, rules, activities, customers }) => {
        const tenant = await createTenant(t.services, 'Model shop');
        const tierIds: number[] = [];
        for (const [i, milestone] of milestones.entries()) {
          tierIds.push((await t.services.vipTiers.create(tenant.accountId, { name: `tier ${i}`, milestone })).id);
        }
        const type = await t.services.activityTypes.create(tenant.accountId, { name: 'Order' });
        const created = await t.services.earningRules.create(
          tenant.accountId,
          rules.map((rule, i) => ({
            ...earningRuleFixture(`rule ${i}`),
            reward_value:
              'fixed' in rule.reward
                ? { type: 'fixed', fixed: { value: Number(rule.reward.fixed) } }
                : {
                    type: 'variable',
                    variable: { value: Number(rule.reward.value), per_amount: Number(rule.reward.per) },
                  },
            earning_limit:
              rule.limit === null
                ? null
                : rule.limit.type === 'lifetime'
                  ? rule.limit
                  : {
                      max: rule.limit.max,
                      type: 'rolling',
                      rolling: { unit: rule.limit.unit, unit_count: rule.limit.count },
                    },
            restricted_to_vip_tier_ids: rule.tiers.map((index) => tierIds[index]),
            activity_token: type.token,
          })),
        );
        expect(created).toHaveLength(rules.length);

        const model = new Model(rules, milestones);
        const customerIds = new Map<number, number>();
        for (const activity of activities) {
          const response = await t.app.inject({
            method: 'POST',
            url: '/v1/activities',
            headers: bearer(tenant.apiKey),
            payload: {
              activity: {
                token: type.token,
                customer_email: `customer${activity.customer}@example.com`,
                created_on_origin_at: new Date(activity.time).toISOString(),
                properties: { amount: activity.amount.asNumber ? Number(activity.amount.text) : activity.amount.text },
              },
            },
          });
          // One credit may give at most 1,000,000,000 points: a rule that would give more refuses the
          // activity before anything is written.
          if (rules.some((rule) => pointsOf(rule, activity.amount.text) > 1_000_000_000)) {
            expect(response.statusCode, response.body).toBe(400);
            expect(response.json().error.details[0].field).toBe('activity.properties.amount');
            continue;
          }
          expect(response.statusCode, response.body).toBe(201);
          const recorded = response.json<{ activity: Activity }>().activity;
          customerIds.set(activity.customer, recorded.customer_id);
          const got = recorded.points_transactions.map((p) => [Number(p.description.slice(5)), p.points_change]);
          expect(got, JSON.stringify(activity)).toEqual(model.record(activity));
        }

        for (const [index, id] of customerIds) {
          const response = await t.app.inject({
            method: 'GET',
            url: `/v1/customers/${id}`,
            headers: bearer(tenant.apiKey),
          });
          const customer = response.json<{ customer: Customer }>().customer;
          const tier = model.tier(index);
          expect(customer.points_balance).toBe(model.earned.get(index) ?? 0);
          expect(customer.vip_status.progress_value).toBe(model.earned.get(index) ?? 0);
          expect(customer.vip_tier_id).toBe(tier === null ? null : tierIds[tier]);
        }
        expect(customers).toBeGreaterThanOrEqual(customerIds.size);
      }),
      { numRuns: testEngine === 'postgres' ? 40 : 80 },
    );
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  }, 120_000);
});
