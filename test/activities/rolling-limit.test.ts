import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Activity } from '../../src/activities/schemas.js';
import { bearer, createTenant, createTestApp, type TestApp, testEngine } from '../helpers/app.js';
import { unbalancedCustomers } from '../helpers/engine.js';
import { earningRuleFixture } from '../helpers/fixtures.js';
import { fullestWindow, greedyCredits, inWindow, type Unit } from './rolling-reference.js';

// Rolling earning limits through the HTTP API (issue 27, item 13): a rolling limit holds for every
// window of its length, whatever order activities arrive or are dated in. A back-dated activity
// must fit in the windows that end after it too, not only in the one that ends at its own time.

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

/** A new account with one activity type, bound to one fixed rule of 10 points with this rolling limit. */
async function program(max: number, unit: Unit, count: number) {
  const tenant = await createTenant(t.services, 'Rolling shop');
  const type = await t.services.activityTypes.create(tenant.accountId, { name: 'Visit' });
  const created = await t.services.earningRules.create(tenant.accountId, [
    {
      ...earningRuleFixture('Visit'),
      reward_value: { type: 'fixed', fixed: { value: 10 } },
      earning_limit: { max, type: 'rolling', rolling: { unit, unit_count: count } },
      activity_token: type.token,
    },
  ]);
  let sent = 0;
  /** Records an activity of the one customer at `time` (omitted: when received); true when it was credited. */
  const send = async (time?: number) => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: bearer(tenant.apiKey),
      payload: {
        activity: {
          token: type.token,
          customer_email: 'visitor@example.com',
          distinct_id: `visit-${sent++}`,
          ...(time === undefined ? {} : { created_on_origin_at: new Date(time).toISOString() }),
        },
      },
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json<{ activity: Activity }>().activity.points_transactions.length === 1;
  };
  const ruleId = (Array.isArray(created) ? created : [created])[0]!.id;
  return { tenant, token: type.token, ruleId, send };
}

/** The times of every credit of the database's account `accountId`, ascending. */
async function creditTimes(accountId: number): Promise<number[]> {
  const rows = await t.db.kysely
    .selectFrom('points_transactions')
    .select('occurred_at')
    .where('account_id', '=', accountId)
    .orderBy('occurred_at')
    .execute();
  return rows.map((row) => Number(row.occurred_at));
}

/** Credits of the rule written straight to the ledger at `times`, as no activity would leave them. */
async function insertCredits(accountId: number, customerId: number, ruleId: number, times: readonly number[]) {
  await t.db.kysely
    .insertInto('points_transactions')
    .values(
      times.map((time) => ({
        account_id: accountId,
        customer_id: customerId,
        points_change: 10,
        description: 'Visit',
        earning_rule_id: ruleId,
        occurred_at: time,
        created_at: time,
        updated_at: time,
      })),
    )
    .execute();
}

describe(`a rolling limit holds for every window (${testEngine})`, () => {
  const at = (iso: string) => Date.parse(iso);
  const now = () => t.clock.now();

  // Each case: the rule, then activities in the order they are sent, each with whether it credits.
  it.each([
    {
      name: 'back-dated by seconds, out of order (the issue): 2 of 4 on 2 per day',
      rule: [2, 'day', 1] as const,
      sent: () => [
        [now() - 60_000, true],
        [now() - 30_000, true],
        [now() - 120_000, false],
        [now() - 180_000, false],
      ],
    },
    {
      name: 'up to 5 minutes ahead counts like any other time',
      rule: [2, 'day', 1] as const,
      sent: () => [
        [now() + 4 * MINUTE_MS, true],
        [undefined, true],
        [now() - 10_000, false],
        [now() + 5 * MINUTE_MS, false],
      ],
    },
    {
      name: 'a credit dated before a later one fits only where no window holds both beyond the limit',
      rule: [1, 'day', 1] as const,
      sent: () => [
        [now() - HOUR_MS, true],
        // The window ending an hour ago starts 25 hours ago: it would hold both.
        [now() - 24 * HOUR_MS, false],
        // 25 hours ago exactly is where that window starts: no window of a day holds both.
        [now() - 25 * HOUR_MS, true],
        [now() - 49 * HOUR_MS - 1, true],
        [now() - 48 * HOUR_MS, false],
      ],
    },
    {
      name: 'weeks: 1 per week, back-dated',
      rule: [1, 'week', 1] as const,
      sent: () => [
        [now() - 6 * DAY_MS, true],
        // The window ending 6 days ago starts 13 days ago.
        [now() - 12 * DAY_MS, false],
        [now() - 13 * DAY_MS, true],
        [now() - 20 * DAY_MS, true],
        [now() - 19 * DAY_MS, false],
      ],
    },
    {
      name: 'months at a month end: 1 per month',
      rule: [1, 'month', 1] as const,
      sent: () => [
        [at('2025-01-31T12:00:00Z'), true],
        // The window ending February 28 12:00 starts January 28 12:00.
        [at('2025-02-28T12:00:00Z'), false],
        // From March 1 windows start on February 1 or later.
        [at('2025-03-01T00:00:00Z'), true],
        // The window ending January 31 12:00 starts December 31 12:00: it holds a millisecond later.
        [at('2024-12-31T12:00:00.001Z'), false],
        [at('2024-12-31T12:00:00.000Z'), true],
      ],
    },
    {
      name: 'months, where a window starts earlier for a later end: 1 per month',
      rule: [1, 'month', 1] as const,
      sent: () => [
        [at('2025-03-28T23:00:00Z'), true],
        // The window ending March 29 00:00 starts February 28 00:00 (there is no February 29th):
        // it holds both, though the windows ending at either credit do not.
        [at('2025-02-28T00:30:00Z'), false],
        [at('2025-02-27T23:30:00Z'), true],
      ],
    },
    {
      name: 'years around a leap day: 1 per year',
      rule: [1, 'year', 1] as const,
      sent: () => [
        [at('2024-02-29T10:00:00Z'), true],
        // A year back from February 28 10:00 is February 28 10:00: the window holds February 29.
        [at('2025-02-28T09:00:00Z'), false],
        [at('2025-03-01T00:00:00Z'), true],
        // The window ending February 29 2024 23:59:59.999 starts February 28 2023 at that time.
        [at('2023-03-01T00:00:00Z'), false],
        // The window ending February 29 2024 10:00 starts February 28 2023 10:00, just after.
        [at('2023-02-28T10:00:00Z'), true],
      ],
    },
    {
      name: 'three at one instant on 2 per day',
      rule: [2, 'day', 1] as const,
      sent: () => [
        [at('2025-06-01T00:00:00Z'), true],
        [at('2025-06-01T00:00:00Z'), true],
        [at('2025-06-01T00:00:00Z'), false],
      ],
    },
  ])('$name', async ({ rule: [max, unit, count], sent }) => {
    const { tenant, send } = await program(max, unit, count);
    const cases = sent() as [number | undefined, boolean][];
    const credited: boolean[] = [];
    for (const [time] of cases) credited.push(await send(time));
    expect(credited).toEqual(cases.map(([, credits]) => credits));
    expect(fullestWindow(await creditTimes(tenant.accountId), unit, count)).toBeLessThanOrEqual(max);
  });

  it('reads every credit that matters where more than 3 × max lie around t (given before the fix)', async () => {
    const { tenant, ruleId, send } = await program(1, 'month', 1);
    expect(await send(at('2025-01-01T00:00:00Z'))).toBe(true);
    const customer = await t.db.kysely
      .selectFrom('customers')
      .select('id')
      .where('account_id', '=', tenant.accountId)
      .executeTakeFirstOrThrow();
    // Credits past the limit, as the code before the fix could leave them: four on February 15
    // 06:00, which no window holding March 15 12:00 reaches, and one on March 15 13:00, which the
    // window ending at it holds with March 15 12:00. A read of the first 3 × max + 1 in the range
    // would see only the four.
    const times = [0, 1, 2, 3].map((ms) => at('2025-02-15T06:00:00Z') + ms);
    times.push(at('2025-03-15T13:00:00Z'));
    await insertCredits(tenant.accountId, Number(customer.id), ruleId, times);
    expect(await send(at('2025-03-15T12:00:00Z'))).toBe(false);
    expect(await send(at('2025-02-15T05:00:00Z'))).toBe(false);
    // Past the window that ends at March 15 13:00.
    expect(await send(at('2025-04-15T13:00:00Z'))).toBe(true);
  });

  it('holds a limit above 100 (counted before its times are read) the same way', async () => {
    const max = 150;
    const { tenant, ruleId, send } = await program(max, 'day', 1);
    expect(await send(now() - 2 * HOUR_MS)).toBe(true);
    const customer = await t.db.kysely
      .selectFrom('customers')
      .select('id')
      .where('account_id', '=', tenant.accountId)
      .executeTakeFirstOrThrow();
    // max − 1 more credits in the last hour: the day ending now holds max of them.
    const times = Array.from({ length: max - 1 }, (_, k) => now() - HOUR_MS + k * 1000);
    await insertCredits(tenant.accountId, Number(customer.id), ruleId, times);
    expect(await send()).toBe(false);
    // 25 hours back: every window holding it ends over an hour ago, with at most the credit of 2
    // hours ago besides.
    expect(await send(now() - 25 * HOUR_MS)).toBe(true);
    // 23 hours back: the window ending now holds it and the max credits.
    expect(await send(now() - 23 * HOUR_MS)).toBe(false);
    expect(fullestWindow(await creditTimes(tenant.accountId), 'day', 1)).toBe(max);
  });

  it('more than 5 minutes ahead is refused, and credits nothing', async () => {
    const { tenant, token } = await program(2, 'day', 1);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: bearer(tenant.apiKey),
      payload: {
        activity: {
          token,
          customer_email: 'visitor@example.com',
          created_on_origin_at: new Date(now() + 5 * MINUTE_MS + 1).toISOString(),
        },
      },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.details[0].field).toBe('activity.created_on_origin_at');
    expect(await creditTimes(tenant.accountId)).toEqual([]);
  });
});

// Instants around month ends and a leap day, sent in any order: each credited exactly when the
// reference model (greedy over every window) credits it, and no window ends up over the limit.
const DAYS = ['2024-01-31', '2024-02-28', '2024-02-29', '2024-03-01', '2024-03-28', '2024-03-31', '2025-02-28'].map(
  (day) => Date.parse(`${day}T00:00:00Z`),
);

const timeArb = fc.oneof(
  fc
    .tuple(fc.constantFrom(...DAYS), fc.integer({ min: -30, max: 30 }), fc.constantFrom(0, 1, -1, 1_800_000))
    .map(([day, hours, ms]) => day + hours * HOUR_MS + ms),
  fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2025, 5, 1) }),
);

describe(`rolling limits against the reference model (${testEngine})`, () => {
  it('credits what the model credits, activity by activity, and no window holds more than max', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.constantFrom<Unit>('day', 'week', 'month', 'year'),
        fc.integer({ min: 1, max: 2 }),
        fc.array(timeArb, { minLength: 1, maxLength: 10 }),
        async (max, unit, count, times) => {
          const { tenant, send } = await program(max, unit, count);
          const model = greedyCredits(times, max, unit, count);
          const credited: boolean[] = [];
          for (const time of times) credited.push(await send(time));
          expect(credited).toEqual(model);
          const credits = await creditTimes(tenant.accountId);
          // The check of the issue, on its own: the window ending at each credit holds at most max.
          for (const end of credits) expect(inWindow(credits, end, unit, count)).toBeLessThanOrEqual(max);
          expect(fullestWindow(credits, unit, count)).toBeLessThanOrEqual(max);
        },
      ),
      { numRuns: testEngine === 'postgres' ? 40 : 80 },
    );
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  }, 120_000);
});
