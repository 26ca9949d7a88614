import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PointsProduct } from '../../src/points-products/schemas.js';
import type { RewardFulfillment } from '../../src/reward-fulfillments/schemas.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createMerchant, type Merchant, signedIn } from './helpers.js';

// Issue 31, the console's part: the rewards page finds the code a customer shows (as typed),
// marks it used, and cancels one after a confirmation, giving its points back; a code that can no
// longer be cancelled says why instead of offering it. Products take expires_after_days.

let t: TestApp;
let merchant: Merchant;
let jane: number;
let product: PointsProduct;

beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t);
  jane = (await t.services.customers.create(merchant.accountId, { email: 'jane@example.com' })).id;
  await t.services.pointsTransactions.adjust(merchant.accountId, { customer_id: jane, points_change: 500 });
  product = (await t.services.pointsProducts.create(merchant.accountId, {
    exchange_type: 'fixed',
    points_price: 100,
    reward: { name: '$5 off' },
  })) as PointsProduct;
});
afterEach(async () => t.close());

const buy = async (): Promise<RewardFulfillment> =>
  (await t.services.pointsProducts.purchase(merchant.accountId, product.id, { customer_id: jane })).reward_fulfillment;
const balance = async () => (await t.services.customers.get(merchant.accountId, jane)).points_balance;
const fulfillment = async (id: number) => t.services.rewardFulfillments.get(merchant.accountId, id);

describe('the console: rewards', () => {
  it('finds a code as typed, marks it used, and cancels another after a confirmation', async () => {
    const browser = await signedIn(t, merchant);
    const first = await buy();
    const second = await buy();
    const all = await browser.get('/admin/rewards');
    expect(all.statusCode).toBe(200);
    expect(all.body).toContain(`id="reward-${first.id}"`);
    expect(all.body).toContain(`id="reward-${second.id}"`);
    expect(all.body).toContain('jane@example.com');

    const typed = `${first.code.slice(0, 8).toLowerCase()}-${first.code.slice(8)}`;
    const found = await browser.get(`/admin/rewards?code=${encodeURIComponent(typed)}`);
    expect(found.body).toContain(`id="reward-${first.id}"`);
    expect(found.body).not.toContain(`id="reward-${second.id}"`);

    const used = await browser.submit(`/admin/rewards/${first.id}/use`);
    expect(used.statusCode).toBe(303);
    expect(used.headers.location).toBe(`/admin/rewards?code=${first.code}&notice=used`);
    expect((await fulfillment(first.id)).usage_status).toBe('used');
    const after = await browser.get(used.headers.location as string);
    expect(after.body).toContain('Marked used.');
    expect(after.body).not.toContain(`/admin/rewards/${first.id}/cancel`);

    // Cancelling asks first, and nothing changes until it is confirmed.
    const asked = await browser.get(`/admin/rewards/${second.id}/cancel`);
    expect(asked.statusCode).toBe(200);
    expect(asked.body).toContain(`Cancel the code ${second.code}?`);
    expect(asked.body).toContain(`action="/admin/rewards/${second.id}/cancel"`);
    expect(await balance()).toBe(300);
    const cancelled = await browser.submit(`/admin/rewards/${second.id}/cancel`);
    expect(cancelled.statusCode).toBe(303);
    expect((await fulfillment(second.id)).fulfillment_status).toBe('cancelled');
    expect(await balance()).toBe(400);
    expect((await browser.get(cancelled.headers.location as string)).body).toContain('the points it cost are back');

    // A used code offers no cancel: the confirmation page says why, without a button.
    const refused = await browser.get(`/admin/rewards/${first.id}/cancel`);
    expect(refused.body).toContain('cannot be cancelled');
    expect(refused.body).not.toContain(`action="/admin/rewards/${first.id}/cancel"`);
    // Sent anyway (a stale page): the API's refusal, and nothing written.
    const stale = await browser.submit(`/admin/rewards/${second.id}/cancel`);
    expect(stale.statusCode).toBe(409);
    expect(await balance()).toBe(400);
  });

  it("filters by status, and never shows another account's codes", async () => {
    const browser = await signedIn(t, merchant);
    const mine = await buy();
    await t.services.rewardFulfillments.use(merchant.accountId, mine.id);
    const open = await buy();
    const used = await browser.get('/admin/rewards?status=used');
    expect(used.body).toContain(`id="reward-${mine.id}"`);
    expect(used.body).not.toContain(`id="reward-${open.id}"`);
    expect((await browser.get('/admin/rewards?status=nonsense')).statusCode).toBe(400);

    const other = await createMerchant(t, 'Other shop');
    const theirs = await signedIn(t, other);
    expect((await theirs.get(`/admin/rewards?code=${mine.code}`)).body).toContain(
      'No reward of this account has this code.',
    );
    expect((await theirs.get(`/admin/rewards/${open.id}/cancel`)).statusCode).toBe(404);
    expect((await theirs.submit(`/admin/rewards/${open.id}/use`)).statusCode).toBe(404);
    expect((await fulfillment(open.id)).usage_status).toBe('unused');
  });

  it('sets a points product’s expires_after_days from its form, and clears it', async () => {
    const browser = await signedIn(t, merchant);
    const fields = {
      'reward.name': 'Free shipping',
      'reward.description': '',
      'reward.image_url': '',
      exchange_type: 'fixed',
      points_price: '50',
      expires_after_days: '30',
      enabled: 'on',
    };
    const created = await browser.submit('/admin/points-products', fields);
    expect(created.statusCode).toBe(303);
    const [made] = (await t.services.pointsProducts.listAll(merchant.accountId)).filter(
      (p) => p.reward.name === 'Free shipping',
    );
    expect(made!.expires_after_days).toBe(30);
    const bad = await browser.submit('/admin/points-products', { ...fields, expires_after_days: '0' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('f-expires_after_days-error');
    await browser.submit(`/admin/points-products/${made!.id}`, { ...fields, expires_after_days: '' });
    expect((await t.services.pointsProducts.get(merchant.accountId, made!.id)).expires_after_days).toBeNull();
  });
});

describe('the console: scheduled work on the overview', () => {
  it('lists the recurring jobs with their last run and outcome, from the database', async () => {
    const browser = await signedIn(t, merchant);
    const empty = await browser.get('/admin/overview');
    expect(empty.body).toContain('id="no-scheduled"');
    // What a server's runner does at start, then a run of the points expiry job (1.2 s, done).
    await t.services.jobs.ensureScheduled('points_expiry', 'points_expiry', t.clock.now() + 60_000);
    await t.services.jobs.ensureScheduled('housekeeping', 'housekeeping', t.clock.now() + 60_000);
    await t.db.kysely
      .updateTable('jobs')
      .set({ last_run_at: t.clock.now(), last_duration_ms: 1200, last_failed: 0 })
      .where('unique_key', '=', 'points_expiry')
      .execute();
    const page = (await browser.get('/admin/overview')).body;
    const row = (key: string) => new RegExp(`<tr id="job-${key}">([\\s\\S]*?)</tr>`).exec(page)?.[1] ?? '';
    expect(row('points_expiry')).toContain('Points expiry');
    expect(row('points_expiry')).toContain('1,200 ms');
    expect(row('points_expiry')).toContain('Done');
    expect(row('housekeeping')).toContain('Not yet');
    expect(row('housekeeping')).toContain('None yet');
  });
});
