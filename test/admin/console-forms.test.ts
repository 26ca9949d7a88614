import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as activityTypeNames from '../../src/storage/migrations/2026-11-25T0000-activity-type-names.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { rowCount } from '../helpers/engine.js';
import { hiddenFields } from '../oauth/helpers.js';
import {
  type ConsoleBrowser,
  createMerchant,
  fieldError,
  fieldValue,
  type Merchant,
  PASSWORD,
  signedIn,
} from './helpers.js';

// Issue 27, items 2, 3, 5, 7 and 8: the console's forms in a merchant's words, the earning-rule
// form by kind, a form sent after the session expired, points products edited and deleted, and
// activity-type names unique in an account.

let t: TestApp;
let merchant: Merchant;
let browser: ConsoleBrowser;
beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t);
  await t.services.pointsSettings.set(merchant.accountId, { points_label: { one: 'Coin', other: 'Coins' } });
  browser = await signedIn(t, merchant);
});
afterEach(async () => t.close());

const RULE = {
  name: 'Place an order',
  image_url: 'https://cdn.example.com/order.png',
  'reward_value.type': 'fixed',
  'reward_value.fixed.value': '50',
  'earning_limit.type': '',
  enabled: 'on',
};

/** The opening tag of the element with this id. */
function tagOf(page: string, id: string): string {
  return new RegExp(`<[a-z]+ [^>]*id="${id}"[^>]*>`).exec(page)?.[0] ?? '';
}

describe('refusals in a merchant’s words, at the field', () => {
  it('words schema refusals for people, marks each field, and links the summary to it by its label', async () => {
    const refused = await browser.submit('/admin/earning-rules', {
      ...RULE,
      'reward_value.type': 'variable',
      'reward_value.variable.value': '5',
      'reward_value.variable.per_amount': 'one dollar',
    });
    expect(refused.statusCode).toBe(400);
    expect(fieldError(refused.body, 'reward_value.variable.per_amount')).toBe('Enter a number, such as 5 or 2.5.');
    const input = tagOf(refused.body, 'f-reward_value-variable-per_amount');
    expect(input).toContain('aria-invalid="true"');
    expect(input).toMatch(/aria-describedby="[^"]*f-reward_value-variable-per_amount-error/);
    expect(refused.body).toContain(
      '<a href="#f-reward_value-variable-per_amount">Per amount: Enter a number, such as 5 or 2.5.</a>',
    );
    // Nothing of JSON Schema's wording or of the input's paths reaches the merchant.
    expect(refused.body).not.toMatch(/must be number|reward_value\.variable\.per_amount:/);
    expect(fieldValue(refused.body, 'reward_value.variable.per_amount')).toBe('one dollar');
  });

  it('says amounts of points in the account’s label', async () => {
    const tier = await browser.submit('/admin/vip-tiers', { name: 'Gold', milestone: '1.5' });
    expect(tier.statusCode).toBe(400);
    expect(fieldError(tier.body, 'milestone')).toBe('Enter a whole number of Coins, such as 50.');
    expect(tier.body).not.toContain('must be integer');

    const product = await browser.submit('/admin/points-products', {
      'reward.name': '$5 off',
      exchange_type: 'fixed',
      points_price: '0',
    });
    expect(product.statusCode).toBe(400);
    expect(fieldError(product.body, 'points_price')).toBe('Enter at least 1 Coin.');
  });

  it('words a reference to another account without its internal id', async () => {
    const other = await createMerchant(t, 'Other shop');
    const foreign = await t.services.activityTypes.create(other.accountId, { name: 'Order' });
    const refused = await browser.submit('/admin/earning-rules', { ...RULE, activity_token: foreign.token });
    expect(refused.statusCode).toBe(400);
    expect(fieldError(refused.body, 'activity_token')).toBe('Choose one of this account’s activity types.');
    expect(refused.body).not.toContain(`account ${other.accountId}`);
  });

  it('shows a removal beyond the balance at the points field, in the account’s label, without the customer’s id', async () => {
    const customer = await t.services.customers.create(merchant.accountId, { email: 'ann@example.com' });
    await t.services.pointsTransactions.adjust(merchant.accountId, {
      customer_id: customer.id,
      points_change: 150,
      description: 'Welcome',
      internal_note: null,
    });
    const refused = await browser.submit(`/admin/customers/${customer.id}/adjust`, {
      points_change: '-1000',
      description: 'Correction',
    });
    expect(refused.statusCode).toBe(422);
    const message = fieldError(refused.body, 'points_change');
    expect(message).toMatch(/Coins/);
    expect(message).not.toMatch(/customer \d|points/);
    expect(tagOf(refused.body, 'f-points_change')).toContain('aria-invalid="true"');
    expect(refused.body).toContain('<a href="#f-points_change">');
    expect(await rowCount(t.db.kysely, 'points_transactions')).toBe(1);
  });
});

describe('the earning-rule form', () => {
  it('groups the fields of each reward kind and limit kind, marking optional only what is', async () => {
    const page = await browser.get('/admin/earning-rules/new');
    expect(page.statusCode).toBe(200);
    const body = page.body;
    // Radio buttons choose the kind; each kind's fields are in their own group, which the
    // stylesheet hides unless its kind is chosen (no script).
    expect(body).toMatch(
      /<input type="radio" id="f-reward_value-type" name="reward_value\.type" value="fixed" checked>/,
    );
    expect(body).toMatch(/id="f-reward_value-type-variable" name="reward_value\.type" value="variable">/);
    const fixed = body.slice(body.indexOf('class="when when-fixed"'), body.indexOf('class="when when-variable"'));
    expect(fixed).toContain('name="reward_value.fixed.value"');
    expect(fixed).not.toContain('reward_value.variable');
    const rolling = body.slice(body.indexOf('class="when when-rolling"'));
    expect(rolling).toContain('name="earning_limit.rolling.unit_count"');
    // Required when shown: no "(optional)" beside them.
    for (const name of [
      'reward_value.fixed.value',
      'reward_value.variable.per_amount',
      'earning_limit.max',
      'image_url',
    ]) {
      const id = `f-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;
      const label = new RegExp(`<label for="${id}">([^\\n]*)</label>`).exec(body)?.[1];
      expect(label, name).toBeDefined();
      expect(label, name).not.toContain('optional');
    }
    expect(/<label for="f-action_text">([^\n]*)<\/label>/.exec(body)?.[1]).toContain('(optional)');
    const css = (await browser.get('/admin/assets/admin.css')).body;
    expect(css).toContain('.rule-form:has(#f-reward_value-type:not(:checked)) .when-fixed');
  });

  it('reads only the chosen kind’s fields, and lists amounts in the account’s labels', async () => {
    const saved = await browser.submit('/admin/earning-rules', {
      ...RULE,
      // The hidden variable fields hold leftovers: they are not read.
      'reward_value.variable.value': 'junk',
      'earning_limit.type': 'rolling',
      'earning_limit.max': '2',
      'earning_limit.rolling.unit_count': '1',
      'earning_limit.rolling.unit': 'day',
    });
    expect(saved.statusCode, saved.body).toBe(303);
    const list = await browser.get('/admin/earning-rules');
    expect(list.body).toContain('50 Coins each time');
    expect(list.body).toContain('at most 2 times per day');
  });
});

describe('a form sent after the session expired', () => {
  it('saves nothing, says so, and after signing in shows the form as typed to send again', async () => {
    await browser.get('/admin/earning-rules/new');
    const csrf = await browser.csrf();
    t.clock.advance(31 * 60 * 1000);
    const late = await browser.postRaw(
      '/admin/earning-rules',
      new URLSearchParams({ csrf_token: csrf, ...RULE }).toString(),
    );
    expect(late.statusCode).toBe(401);
    expect(late.body).toContain('Your session expired; nothing was saved.');
    expect(await rowCount(t.db.kysely, 'earning_rules')).toBe(0);

    // The sign-in page carries the form, with the token of the session it signs in.
    const signIn = browser;
    for (const cookie of late.cookies as Array<{ name: string; value: string; path?: string }>) {
      signIn.cookies.set(cookie.name, { value: cookie.value, path: cookie.path ?? '/' });
    }
    const carried = hiddenFields(late.body);
    expect(carried['carry.name']).toBe('Place an order');
    expect(carried.form_action).toBe('/admin/earning-rules');
    const shown = await signIn.post('/admin/sign-in', { ...carried, email: merchant.email, password: PASSWORD });
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('Your session expired, so nothing was saved.');
    expect(fieldValue(shown.body, 'name')).toBe('Place an order');
    expect(fieldValue(shown.body, 'reward_value.fixed.value')).toBe('50');
    expect(fieldValue(shown.body, 'image_url')).toBe('https://cdn.example.com/order.png');
    // Shown, not applied: a cross-site post could fill a form in, never save one.
    expect(await rowCount(t.db.kysely, 'earning_rules')).toBe(0);

    // Sent again from that page (its token is the new session's), it is saved.
    const again = await signIn.post('/admin/earning-rules', { ...hiddenFields(shown.body), ...RULE });
    expect(again.statusCode, again.body).toBe(303);
    expect(await rowCount(t.db.kysely, 'earning_rules')).toBe(1);
  });

  it('says an action was not done, and never replays one', async () => {
    const rule = await t.services.earningRules.create(merchant.accountId, {
      name: 'Visit',
      image_url: 'https://cdn.example.com/v.png',
      reward: { type: 'points' },
      reward_value: { type: 'fixed', fixed: { value: 5 } },
    });
    const id = (rule as { id: number }).id;
    const csrf = await browser.csrf();
    t.clock.advance(31 * 60 * 1000);
    const late = await browser.postRaw(`/admin/earning-rules/${id}/disable`, `csrf_token=${csrf}`);
    expect(late.statusCode).toBe(401);
    expect(late.body).toContain('Your session expired; nothing was saved. Sign in again, then do it again.');
    expect(hiddenFields(late.body).form_action).toBeUndefined();
    // Forged: a restore of an action, from a signed-in session with its token, does nothing.
    const fresh = await signedIn(t, merchant);
    const forged = await fresh.submit(`/admin/earning-rules/${id}/disable`, { restore_form: '1' });
    expect(forged.statusCode).toBe(200);
    expect((await t.services.earningRules.getStored(merchant.accountId, id)).enabled).toBe(true);
  });
});

describe('points products', () => {
  async function product() {
    const created = await t.services.pointsProducts.create(merchant.accountId, {
      exchange_type: 'fixed',
      points_price: 100,
      reward: { name: '$5 off' },
    });
    return created as { id: number };
  }

  it('are edited through a form shown filled in', async () => {
    const { id } = await product();
    const page = await browser.get(`/admin/points-products/${id}`);
    expect(page.statusCode).toBe(200);
    expect(fieldValue(page.body, 'reward.name')).toBe('$5 off');
    expect(fieldValue(page.body, 'points_price')).toBe('100');
    const saved = await browser.submit(`/admin/points-products/${id}`, {
      'reward.name': '$10 off',
      exchange_type: 'variable',
      variable_points_step: '100',
      variable_points_step_reward_value: '1',
      variable_points_min: '100',
      variable_points_max: '1000',
      enabled: 'on',
    });
    expect(saved.statusCode, saved.body).toBe(303);
    const [stored] = await t.services.pointsProducts.listAll(merchant.accountId);
    expect(stored).toMatchObject({
      id,
      exchange_type: 'variable',
      points_price: null,
      variable_points_step: 100,
      exchange_description: '1 off for every 100 Coins',
      reward: { name: '$10 off' },
      enabled: true,
    });
  });

  it('are deleted when never bought, and refused with a clear message when bought', async () => {
    const unsold = await product();
    const confirm = await browser.get(`/admin/points-products/${unsold.id}/delete`);
    expect(confirm.body).toContain('Delete the product');
    const deleted = await browser.submit(`/admin/points-products/${unsold.id}/delete`);
    expect(deleted.statusCode).toBe(303);
    expect(await t.services.pointsProducts.listAll(merchant.accountId)).toEqual([]);

    const sold = await product();
    const customer = await t.services.customers.create(merchant.accountId, { email: 'bob@example.com' });
    await t.services.pointsTransactions.adjust(merchant.accountId, {
      customer_id: customer.id,
      points_change: 500,
      description: 'Welcome',
      internal_note: null,
    });
    await t.services.pointsProducts.purchase(merchant.accountId, sold.id, { customer_id: customer.id });
    const page = await browser.get(`/admin/points-products/${sold.id}/delete`);
    expect(page.body).toContain('cannot be deleted');
    expect(page.body).toContain('Disable it instead');
    expect(page.body).not.toContain('Delete the product');
    const refused = await browser.submit(`/admin/points-products/${sold.id}/delete`);
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('was bought once');
    expect(await t.services.pointsProducts.listAll(merchant.accountId)).toHaveLength(1);
    expect(await rowCount(t.db.kysely, 'reward_fulfillments')).toBe(1);
  });

  it('of another account are not found', async () => {
    const other = await createMerchant(t, 'Other shop');
    const foreign = (await t.services.pointsProducts.create(other.accountId, {
      exchange_type: 'fixed',
      points_price: 100,
      reward: { name: 'Theirs' },
    })) as { id: number };
    expect((await browser.get(`/admin/points-products/${foreign.id}`)).statusCode).toBe(404);
    expect((await browser.submit(`/admin/points-products/${foreign.id}`, { 'reward.name': 'x' })).statusCode).toBe(404);
    expect((await browser.submit(`/admin/points-products/${foreign.id}/delete`)).statusCode).toBe(404);
    expect(await t.services.pointsProducts.listAll(other.accountId)).toHaveLength(1);
  });
});

describe('activity-type names', () => {
  it('are unique in an account: a second one of a name is refused at the field, in other accounts allowed', async () => {
    expect((await browser.submit('/admin/activity-types', { name: 'Place an order' })).statusCode).toBe(303);
    const again = await browser.submit('/admin/activity-types', { name: 'Place an order' });
    expect(again.statusCode).toBe(400);
    expect(fieldError(again.body, 'name')).toBe(
      'This account already has an activity type with this name: choose another name.',
    );
    await expect(t.services.activityTypes.create(merchant.accountId, { name: 'Place an order' })).rejects.toMatchObject(
      {
        code: 'invalid_parameter',
        details: [{ field: 'activity_type.name', message: 'is already the name of an activity type of this account' }],
      },
    );
    const other = await createMerchant(t, 'Other shop');
    await expect(t.services.activityTypes.create(other.accountId, { name: 'Place an order' })).resolves.toMatchObject({
      name: 'Place an order',
    });
    expect(await rowCount(t.db.kysely, 'activity_types')).toBe(2);
  });

  it('made unique by the migration: duplicates already stored get a suffix, the oldest keeps its name', async () => {
    const db = t.db.kysely;
    await activityTypeNames.down(db);
    const values = (name: string, token: string) => ({
      account_id: merchant.accountId,
      name,
      token,
      created_at: 0,
    });
    await db
      .insertInto('activity_types')
      .values([
        values('Order', 'activity_a0000000000000000001'),
        values('Order', 'activity_a0000000000000000002'),
        values('Order (2)', 'activity_a0000000000000000003'),
        values('Order', 'activity_a0000000000000000004'),
      ])
      .execute();
    await activityTypeNames.up(db);
    const names = (await t.services.activityTypes.list(merchant.accountId)).map((type) => type.name);
    expect(names).toEqual(['Order', 'Order (3)', 'Order (2)', 'Order (4)']);
    await expect(t.services.activityTypes.create(merchant.accountId, { name: 'Order' })).rejects.toMatchObject({
      code: 'invalid_parameter',
    });
  });
});
