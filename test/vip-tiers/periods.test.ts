import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Customer } from '../../src/customers/schemas.js';
import { VIP_PERIODS_QUEUE } from '../../src/vip-tiers/service.js';
import { createMerchant, signedIn } from '../admin/helpers.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { cliChecks, loyalty } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { tierChangeEvents } from '../helpers/placement.js';

// VIP periods (engine-contract.md, "VIP periods"), worked through as a merchant would meet them:
// a calendar-year tier kept to the end of next year, a rolling tier that lapses as its points
// leave the window, the job that runs at midnight, a change of type that places everyone again
// (the CLI with its progress, the console with its count), and refusals that write nothing.
// periods.property.test.ts holds the rules against a model on random histories.

const DAY = 86_400_000;

let t: TestApp;
let a: Tenant;
let jane: number;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
});
afterEach(async () => t.close());

const shown = async (id = jane): Promise<Customer> =>
  (await t.app.inject({ method: 'GET', url: `/v1/customers/${id}`, headers: bearer(a.apiKey) })).json().customer;
const give = (points: number, id = jane) =>
  t.services.pointsTransactions.adjust(a.accountId, { customer_id: id, points_change: points });
const tierChanges = async () =>
  (await tierChangeEvents(t.db, a.accountId)).map((change) => change.description as string);

describe('a calendar_year program', () => {
  it('keeps a tier to the end of the next year, asks for what keeps it, and lets it go then', async () => {
    const gold = await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 500 });
    await t.services.vipTiers.setProgramType(a.accountId, 'calendar_year');
    t.clock.set(Date.UTC(2026, 2, 10, 12));
    await give(600);
    expect((await shown()).vip_status).toEqual({
      vip_tier_id: gold.id,
      vip_tier_expires_at: '2027-12-31T23:59:59.999Z',
      progress_value: 600,
      current_vip_period_end: '2026-12-31T23:59:59.999Z',
      delta_to_retain_vip_tier: null,
      next_vip_tier_id: null,
      delta_to_next_vip_tier: null,
    });

    // The year ends: the job places everyone again. Gold is kept (reached in 2026), 500 more this
    // year keep it through 2028.
    t.clock.set(Date.UTC(2027, 0, 1, 0, 0, 1));
    await t.services.vipTiers.runPass();
    expect((await shown()).vip_status).toMatchObject({
      vip_tier_id: gold.id,
      vip_tier_expires_at: '2027-12-31T23:59:59.999Z',
      progress_value: 0,
      current_vip_period_end: '2027-12-31T23:59:59.999Z',
      delta_to_retain_vip_tier: 500,
    });
    t.clock.set(Date.UTC(2027, 5, 1));
    await give(200);
    expect((await shown()).vip_status).toMatchObject({ progress_value: 200, delta_to_retain_vip_tier: 300 });

    // 2028 begins with 200 points earned in 2027: Gold is gone, once, with its event.
    t.clock.set(Date.UTC(2028, 0, 1, 0, 5));
    await t.services.vipTiers.runPass();
    const customer = await shown();
    expect(customer.vip_tier_id).toBeNull();
    expect(customer.vip_status).toMatchObject({ vip_tier_id: null, vip_tier_expires_at: null, progress_value: 0 });
    await t.services.vipTiers.runPass();
    expect(await tierChanges()).toEqual(['Achieved Gold', 'Left Gold']);
  });
});

describe('a rolling_12_months program', () => {
  it('counts the last 12 months and drops the tier the day its points leave them', async () => {
    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 500 });
    await t.services.vipTiers.setProgramType(a.accountId, 'rolling_12_months');
    t.clock.set(Date.UTC(2026, 2, 15, 9));
    await give(600);
    t.clock.set(Date.UTC(2026, 5, 1, 9));
    await give(100);
    expect((await shown()).vip_status).toEqual({
      vip_tier_id: silver.id,
      // The 600 count through 15 March 2027; then 100 are left, 400 short of Silver.
      vip_tier_expires_at: '2027-03-15T23:59:59.999Z',
      progress_value: 700,
      current_vip_period_end: null,
      delta_to_retain_vip_tier: 400,
      next_vip_tier_id: null,
      delta_to_next_vip_tier: null,
    });

    t.clock.set(Date.UTC(2027, 2, 15, 23));
    await t.services.vipTiers.runPass();
    expect((await shown()).vip_tier_id).toBe(silver.id);
    t.clock.set(Date.UTC(2027, 2, 16, 0, 1));
    await t.services.vipTiers.runPass();
    expect((await shown()).vip_status).toMatchObject({
      vip_tier_id: null,
      vip_tier_expires_at: null,
      progress_value: 100,
      delta_to_retain_vip_tier: null,
      next_vip_tier_id: silver.id,
      delta_to_next_vip_tier: 400,
    });
    expect(await tierChanges()).toEqual(['Achieved Silver', 'Left Silver']);
  });
});

describe('the periods job', () => {
  it('runs again at the next UTC midnight, or within the hour', async () => {
    const job = t.services.vipTiers.job();
    expect(job.queue).toBe(VIP_PERIODS_QUEUE);
    t.clock.set(Date.UTC(2026, 11, 31, 23, 30));
    const late = await job.run({} as never);
    expect(late).toEqual({ runAt: Date.UTC(2027, 0, 1) });
    t.clock.set(Date.UTC(2026, 5, 1, 10));
    expect(await job.run({} as never)).toEqual({ runAt: Date.UTC(2026, 5, 1, 11) });
  });

  it('touches nobody whose placement time did not change', async () => {
    await t.services.vipTiers.setProgramType(a.accountId, 'calendar_year');
    await t.services.vipTiers.runPass();
    const before = await shown();
    t.clock.advance(5 * DAY);
    await t.services.vipTiers.runPass();
    expect((await shown()).updated_at).toBe(before.updated_at);
  });
});

describe('changing the program type', () => {
  it('places every customer again under the new rules, with an event for each move', async () => {
    const gold = await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 500 });
    t.clock.set(Date.UTC(2025, 5, 1));
    await give(600);
    t.clock.set(Date.UTC(2026, 5, 2));
    const john = (await t.services.customers.create(a.accountId, { email: 'john@example.com' })).id;
    await give(550, john);
    expect((await shown()).vip_tier_id).toBe(gold.id);

    // Rolling: Jane's 600 counted through their anniversary, yesterday; John's 550 count.
    const status = await t.services.vipTiers.setProgramType(a.accountId, 'rolling_12_months');
    expect(status).toEqual({ type: 'rolling_12_months', customers: 2, waiting: 2 });
    expect(await t.services.vipTiers.placeAgain(a.accountId)).toEqual({ placed: 2, moved: 1 });
    expect((await shown()).vip_tier_id).toBeNull();
    expect((await shown(john)).vip_status).toMatchObject({ vip_tier_id: gold.id, progress_value: 550 });
    expect(await t.services.vipTiers.programStatus(a.accountId)).toMatchObject({ waiting: 0 });

    // Back to all time: everyone's points earned count again, the period fields are null.
    await t.services.vipTiers.setProgramType(a.accountId, 'all_time');
    await t.services.vipTiers.runPass();
    expect((await shown()).vip_status).toEqual({
      vip_tier_id: gold.id,
      vip_tier_expires_at: null,
      progress_value: 600,
      current_vip_period_end: null,
      delta_to_retain_vip_tier: null,
      next_vip_tier_id: null,
      delta_to_next_vip_tier: null,
    });
    expect(await tierChanges()).toEqual(['Achieved Gold', 'Achieved Gold', 'Left Gold', 'Achieved Gold']);
  });

  it('refuses an unknown type and writes nothing', async () => {
    await expect(t.services.vipTiers.setProgramType(a.accountId, 'monthly')).rejects.toMatchObject({
      code: 'invalid_parameter',
    });
    await expect(t.services.vipTiers.setProgramType(9_999_999, 'calendar_year')).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(await t.services.vipTiers.programStatus(a.accountId)).toEqual({
      type: 'all_time',
      customers: 1,
      waiting: 0,
    });
    const account = await t.db.kysely
      .selectFrom('accounts')
      .select(['vip_program', 'vip_program_version'])
      .where('id', '=', a.accountId)
      .executeTakeFirstOrThrow();
    expect(account).toEqual({ vip_program: 'all_time', vip_program_version: 0 });
  });

  it('from the console: a select, then the count of customers still to place', async () => {
    const merchant = await createMerchant(t);
    await t.services.customers.create(merchant.accountId, { email: 'jo@example.com' });
    const session = await signedIn(t, merchant);
    const page = await session.get('/admin/vip-tiers');
    expect(page.body).toContain('An all-time program');
    const refused = await session.submit('/admin/vip-tiers/program', { type: 'weekly' });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('Program type: Choose one of the options.');
    const saved = await session.submit('/admin/vip-tiers/program', { type: 'calendar_year' });
    expect(saved.statusCode).toBe(303);
    const placing = await session.get(saved.headers.location as string);
    expect(placing.body).toContain('A calendar-year program');
    expect(placing.body).toContain('Placing customers again in this program: 0 of 1 done');
    await t.services.vipTiers.runPass();
    expect((await session.get('/admin/vip-tiers')).body).not.toContain('Placing customers again');
  });
});

describe('loyalty vip-tiers program', () => {
  it('sets the type and places every customer again, with progress on stderr', async () => {
    const database = await createTestDatabase();
    try {
      const env = { DATABASE_URL: database.url };
      const { ok, fails } = cliChecks(() => env);
      const account = String((await ok(['accounts', 'create', '--name', 'Acme'])).id);
      for (const n of [1, 2, 3])
        await ok(['customers', 'create', '--account', account, '--email', `c${n}@example.com`]);
      const text = await loyalty(['vip-tiers', 'program', '--account', account, '--type', 'calendar_year'], env);
      expect(text.code).toBe(0);
      expect(text.stderr).toContain('placing customers again: 3 of 3');
      expect(text.stdout).toContain('VIP program: calendar_year; 3 of 3 customers placed again, 0 moved');
      expect(await ok(['vip-tiers', 'program', '--account', account, '--type', 'calendar_year'], loyalty)).toEqual({
        type: 'calendar_year',
        customers: 3,
        placed: 0,
        moved: 0,
      });
      expect((await fails(['vip-tiers', 'program', '--account', account, '--type', 'weekly'])).code).toBe(
        'invalid_parameter',
      );
    } finally {
      await database.drop();
    }
  });
});
