import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, COPY_CSP } from '../../src/admin/views.js';
import { bearer, createTenant, createTestApp, type TestApp } from '../helpers/app.js';
import { rowCount } from '../helpers/engine.js';
import { authorize, Browser, exchange, setupOAuth } from '../oauth/helpers.js';
import { runningProgram } from '../referrals/program.js';
import {
  ConsoleBrowser,
  createMerchant,
  csrfOf,
  fieldError,
  fieldValue,
  type Merchant,
  PASSWORD,
  signedIn,
} from './helpers.js';

let t: TestApp;
let merchant: Merchant;
beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t, 'Shop <script>alert(1)</script>');
});
afterEach(async () => t.close());

const count = (table: 'activity_types' | 'earning_rules' | 'api_keys' | 'vip_tiers' | 'points_transactions') =>
  rowCount(t.db.kysely, table);

const RULE = {
  name: 'Place an order',
  image_url: 'https://cdn.example.com/order.png',
  'reward_value.type': 'fixed',
  'reward_value.fixed.value': '50',
  'earning_limit.type': '',
  enabled: 'on',
};

/** Every page a signed-in merchant can open with GET, when the account has one of everything. */
async function everyPage(browser: ConsoleBrowser): Promise<string[]> {
  const { accountId } = merchant;
  const type = await t.services.activityTypes.create(accountId, { name: 'Order' });
  const rule = await t.services.earningRules.create(accountId, {
    name: 'Order rule',
    image_url: 'https://cdn.example.com/r.png',
    reward: { type: 'points' },
    reward_value: { type: 'fixed', fixed: { value: 5 } },
    activity_token: type.token,
  });
  const tier = await t.services.vipTiers.create(accountId, { name: 'Gold', milestone: 100 });
  const key = await t.services.auth.createApiKey(accountId);
  const customer = await t.services.customers.create(accountId, { email: 'jane@example.com' });
  void browser;
  return [
    '/admin/overview',
    '/admin/customers',
    `/admin/customers/${customer.id}`,
    '/admin/referrals',
    `/admin/referrals?sender=${customer.id}`,
    '/admin/earning-rules',
    '/admin/earning-rules/new',
    `/admin/earning-rules/${(rule as { id: number }).id}`,
    `/admin/earning-rules/${(rule as { id: number }).id}/delete`,
    '/admin/activity-types',
    '/admin/vip-tiers',
    `/admin/vip-tiers/${tier.id}`,
    `/admin/vip-tiers/${tier.id}/delete`,
    '/admin/points-settings',
    '/admin/points-products',
    '/admin/points-products/new',
    '/admin/referral-settings',
    '/admin/api-keys',
    `/admin/api-keys/${key.id}/revoke`,
    '/admin/apps',
  ];
}

describe('signing in', () => {
  it('sends a visitor without a session to the sign-in page, and back to where they were going', async () => {
    const browser = new ConsoleBrowser(t);
    const away = await browser.get('/admin/customers');
    expect(away.statusCode).toBe(303);
    expect(away.headers.location).toBe('/admin/sign-in?next=%2Fadmin%2Fcustomers');
    const page = await browser.get(away.headers.location as string);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('name="next" value="/admin/customers"');
    const done = await browser.post('/admin/sign-in', {
      csrf_token: csrfOf(page.body),
      email: `  ${merchant.email.toUpperCase()} `,
      password: PASSWORD,
      next: '/admin/customers',
    });
    expect(done.statusCode, done.body).toBe(303);
    expect(done.headers.location).toBe('/admin/customers');
    expect((await browser.get('/admin/customers')).statusCode).toBe(200);
  });

  it('never sends anyone outside the console after sign-in', async () => {
    for (const next of [
      'https://evil.example/',
      '//evil.example',
      '/admin/../oauth2/authorize',
      '/adminx',
      '/admin?x=1',
    ]) {
      const browser = new ConsoleBrowser(t);
      const page = await browser.get('/admin/sign-in');
      const done = await browser.post('/admin/sign-in', {
        csrf_token: csrfOf(page.body),
        email: merchant.email,
        password: PASSWORD,
        next,
      });
      expect(done.headers.location, next).toBe('/admin/overview');
    }
  });

  it('refuses a wrong password with a message, keeping the email typed, and signs nobody in', async () => {
    const browser = new ConsoleBrowser(t);
    const page = await browser.get('/admin/sign-in');
    const wrong = await browser.post('/admin/sign-in', {
      csrf_token: csrfOf(page.body),
      email: merchant.email,
      password: 'not it',
    });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toContain('The email or password is not right');
    expect(wrong.body).toContain(`value="${merchant.email}"`);
    expect(wrong.body).not.toContain('not it');
    expect((await browser.get('/admin/overview')).statusCode).toBe(303);
  });

  it('throttles repeated failures as the OAuth sign-in does: 429 with Retry-After, even for the right password', async () => {
    const browser = new ConsoleBrowser(t);
    const page = await browser.get('/admin/sign-in');
    const csrf = csrfOf(page.body);
    for (let i = 0; i < 5; i++) {
      const failed = await browser.post('/admin/sign-in', { csrf_token: csrf, email: merchant.email, password: 'x' });
      expect(failed.statusCode).toBe(400);
    }
    const throttled = await browser.post('/admin/sign-in', {
      csrf_token: csrf,
      email: merchant.email,
      password: PASSWORD,
    });
    expect(throttled.statusCode).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
    expect(throttled.body).toContain('Too many failed sign-ins');
    expect((await browser.get('/admin/overview')).statusCode).toBe(303);
  });

  it('sets a session cookie that is HttpOnly, SameSite=Strict, scoped to /admin, and Secure over HTTPS', async () => {
    const plain = await t.app.inject({ method: 'GET', url: '/admin/sign-in' });
    const cookie = String(plain.headers['set-cookie']);
    expect(cookie).toMatch(/^loyalty_admin_session=oas_[0-9A-Za-z]{40};/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/admin');
    expect(cookie).not.toContain('Secure');

    const proxied = await createTestApp({ TRUST_PROXY: '127.0.0.1' });
    try {
      const https = await proxied.app.inject({
        method: 'GET',
        url: '/admin/sign-in',
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(https.statusCode).toBe(200);
      expect(String(https.headers['set-cookie'])).toContain('Secure');
    } finally {
      await proxied.close();
    }
  });

  it('gives a new session id at sign-in: a cookie planted before it signs nobody in (no session fixation)', async () => {
    const browser = new ConsoleBrowser(t);
    const page = await browser.get('/admin/sign-in');
    const planted = browser.cookies.get('loyalty_admin_session')?.value as string;
    expect(planted).toBeTruthy();
    await browser.post('/admin/sign-in', { csrf_token: csrfOf(page.body), email: merchant.email, password: PASSWORD });
    const issued = browser.cookies.get('loyalty_admin_session')?.value as string;
    expect(issued).not.toBe(planted);
    expect((await browser.get('/admin/overview')).statusCode).toBe(200);

    const attacker = new Browser(t.app);
    attacker.cookies.set('loyalty_admin_session', { value: planted, path: '/admin' });
    const refused = await attacker.get('/admin/overview');
    expect(refused.statusCode).toBe(303);
    expect(refused.headers.location).toContain('/admin/sign-in');
  });

  it('signs out: the session ends on the server, and its cookie no longer opens the console', async () => {
    const browser = await signedIn(t, merchant);
    const cookie = browser.cookies.get('loyalty_admin_session')?.value as string;
    const out = await browser.submit('/admin/sign-out');
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/admin/sign-in');
    const replay = new Browser(t.app);
    replay.cookies.set('loyalty_admin_session', { value: cookie, path: '/admin' });
    expect((await replay.get('/admin/overview')).statusCode).toBe(303);
  });

  it('ends a session after 30 idle minutes, and any session after 8 hours however busy', async () => {
    const idle = await signedIn(t, merchant);
    t.clock.advance(29 * 60 * 1000);
    expect((await idle.get('/admin/overview')).statusCode).toBe(200);
    t.clock.advance(29 * 60 * 1000);
    // 58 minutes after sign-in, 29 after the last page: still signed in.
    expect((await idle.get('/admin/overview')).statusCode).toBe(200);
    t.clock.advance(31 * 60 * 1000);
    expect((await idle.get('/admin/overview')).statusCode).toBe(303);

    const busy = await signedIn(t, merchant);
    for (let minutes = 0; minutes < 8 * 60 - 20; minutes += 20) {
      t.clock.advance(20 * 60 * 1000);
      expect((await busy.get('/admin/overview')).statusCode).toBe(200);
    }
    t.clock.advance(40 * 60 * 1000);
    expect((await busy.get('/admin/overview')).statusCode).toBe(303);
  });
});

describe('every page', () => {
  it('sends the strict CSP, no-store, DENY framing, and contains no script, inline style or outside resource', async () => {
    const browser = await signedIn(t, merchant);
    const pages = [...(await everyPage(browser)), '/admin/sign-in', '/admin/nothing-here'];
    for (const url of pages) {
      const page = url === '/admin/sign-in' ? await t.app.inject({ method: 'GET', url }) : await browser.get(url);
      expect([200, 404], url).toContain(page.statusCode);
      let body = page.body;
      if (/^\/admin\/customers\/\d+$/.test(url)) {
        // A member's page has their referral URL with a Copy button: the console's one script, and nothing else.
        expect(page.headers['content-security-policy'], url).toBe(COPY_CSP);
        expect(body.match(/<script[^>]*>/g), url).toEqual(['<script src="/admin/assets/copy.js" defer>']);
        body = body.replace('<script src="/admin/assets/copy.js" defer></script>', '');
      } else {
        expect(page.headers['content-security-policy'], url).toBe(CONSOLE_CSP);
      }
      expect(page.headers['cache-control'], url).toBe('no-store');
      expect(page.headers['x-frame-options'], url).toBe('DENY');
      expect(page.headers['content-type'], url).toBe('text/html; charset=utf-8');
      expect(body, url).not.toMatch(/<script|style=|<style|https?:\/\/(?!cdn\.example\.com)[^"<\s]+\.(?:css|js)/i);
      expect(page.body, url).toMatch(/<h1>/);
    }
  });

  it('escapes what merchants and integrators typed', async () => {
    const browser = await signedIn(t, merchant);
    await t.services.activityTypes.create(merchant.accountId, { name: '<img src=x onerror=alert(1)>' });
    const overview = await browser.get('/admin/overview');
    expect(overview.body).toContain('Shop &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(overview.body).not.toContain('<script>alert(1)');
    const types = await browser.get('/admin/activity-types');
    expect(types.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(types.body).not.toContain('<img');
  });
});

describe('CSRF', () => {
  it('refuses a change without the token, with a wrong one, or with another session’s, and changes nothing', async () => {
    const browser = await signedIn(t, merchant);
    const other = await signedIn(t, merchant);
    const otherToken = await other.csrf();
    const cases = ['name=Order', 'name=Order&csrf_token=wrong', `name=Order&csrf_token=${otherToken}`];
    for (const body of cases) {
      const refused = await browser.postRaw('/admin/activity-types', body);
      expect(refused.statusCode, body).toBe(403);
      expect(refused.body).toContain('This form has expired');
    }
    expect(await count('activity_types')).toBe(0);
    const accepted = await browser.postRaw('/admin/activity-types', `name=Order&csrf_token=${await browser.csrf()}`);
    expect(accepted.statusCode).toBe(303);
    expect(await count('activity_types')).toBe(1);
  });

  it('guards sign-in and sign-out too', async () => {
    const noToken = await t.app.inject({
      method: 'POST',
      url: '/admin/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `email=${encodeURIComponent(merchant.email)}&password=${encodeURIComponent(PASSWORD)}`,
    });
    expect(noToken.statusCode).toBe(403);
    expect(noToken.headers['set-cookie']).toBeUndefined();

    const browser = await signedIn(t, merchant);
    expect((await browser.postRaw('/admin/sign-out', 'csrf_token=nope')).statusCode).toBe(403);
    expect((await browser.get('/admin/overview')).statusCode).toBe(200);
  });
});

describe("another account's objects", () => {
  it('are 404 in every URL and form, and stay unchanged', async () => {
    const other = await createTenant(t.services, 'Other shop');
    const type = await t.services.activityTypes.create(other.accountId, { name: 'Other order' });
    const rule = (await t.services.earningRules.create(other.accountId, {
      name: 'Other rule',
      image_url: 'https://cdn.example.com/r.png',
      reward: { type: 'points' },
      reward_value: { type: 'fixed', fixed: { value: 5 } },
    })) as { id: number };
    const tier = await t.services.vipTiers.create(other.accountId, { name: 'Other gold', milestone: 10 });
    const product = (await t.services.pointsProducts.create(other.accountId, {
      exchange_type: 'fixed',
      points_price: 100,
      reward: { name: 'Other reward' },
    })) as { id: number };
    const customer = await t.services.customers.create(other.accountId, { email: 'other@example.com' });
    const connected = await setupOAuth(t);
    await authorize(t, connected);
    const grant = await t.db.kysely.selectFrom('oauth_grants').select('id').executeTakeFirstOrThrow();

    const browser = await signedIn(t, merchant);
    const gets = [
      `/admin/earning-rules/${rule.id}`,
      `/admin/earning-rules/${rule.id}/delete`,
      `/admin/vip-tiers/${tier.id}`,
      `/admin/vip-tiers/${tier.id}/delete`,
      `/admin/customers/${customer.id}`,
      `/admin/api-keys/${other.apiKeyId}/revoke`,
      `/admin/apps/${grant.id}/revoke`,
    ];
    for (const url of gets) {
      const page = await browser.get(url);
      expect(page.statusCode, url).toBe(404);
      expect(page.body).toContain('belongs to another account');
    }
    const posts: Array<[string, Record<string, string>]> = [
      [`/admin/earning-rules/${rule.id}`, RULE],
      [`/admin/earning-rules/${rule.id}/disable`, {}],
      [`/admin/earning-rules/${rule.id}/delete`, {}],
      [`/admin/vip-tiers/${tier.id}`, { name: 'Mine now', milestone: '5' }],
      [`/admin/vip-tiers/${tier.id}/delete`, {}],
      [`/admin/points-products/${product.id}/disable`, {}],
      [`/admin/customers/${customer.id}/adjust`, { points_change: '500', description: 'free points' }],
      [`/admin/api-keys/${other.apiKeyId}/revoke`, {}],
      [`/admin/apps/${grant.id}/revoke`, {}],
    ];
    for (const [url, form] of posts) {
      const refused = await browser.submit(url, form);
      expect(refused.statusCode, url).toBe(404);
    }
    // A form naming another account's activity type is refused like the API refuses it.
    const bound = await browser.submit('/admin/earning-rules', { ...RULE, activity_token: type.token });
    expect(bound.statusCode).toBe(400);
    expect(fieldError(bound.body, 'activity_token')).toBe('Choose one of this account’s activity types.');

    expect(await t.services.earningRules.getStored(other.accountId, rule.id)).toMatchObject({
      name: 'Other rule',
      enabled: true,
    });
    expect((await t.services.vipTiers.list(other.accountId))[0]).toMatchObject({ name: 'Other gold', milestone: 10 });
    expect((await t.services.pointsProducts.get(other.accountId, product.id)).id).toBe(product.id);
    expect((await t.services.customers.get(other.accountId, customer.id)).points_balance).toBe(0);
    const api = await t.app.inject({ method: 'GET', url: '/v1/earning_rules', headers: bearer(other.apiKey) });
    expect(api.statusCode).toBe(200);
    expect(await count('earning_rules')).toBe(1);
    expect((await t.services.oauth.listGrants(connected.accountId)).map((g) => g.id)).toEqual([grant.id]);
  });
});

describe('running the program from the console', () => {
  it('ticks the overview’s setup checklist as the merchant takes each step, above the figures until all are done', async () => {
    const browser = await signedIn(t, merchant);
    const { accountId } = merchant;
    /** Each step's state, in order, and whether the checklist comes before the figures. */
    const checklist = async () => {
      const page = (await browser.get('/admin/overview')).body;
      const list = /<ol class="steps" id="setup-steps">([\s\S]*?)<\/ol>/.exec(page)?.[1] ?? '';
      const states = Array.from(list.matchAll(/<li class="(done|todo)">/g), (m) => m[1]);
      return { states, first: page.indexOf('id="setup"') < page.indexOf('class="figures"'), page };
    };
    expect((await checklist()).states).toEqual(['todo', 'todo', 'todo', 'todo', 'todo', 'todo']);
    expect((await checklist()).page).toContain('6 of 6 steps left');

    await t.services.pointsSettings.set(accountId, { points_label: { one: 'Star', other: 'Stars' } });
    const type = await t.services.activityTypes.create(accountId, { name: 'Order' });
    // A rule bound to nothing never credits: its step is not done yet.
    const rule = {
      name: 'Order rule',
      image_url: 'https://cdn.example.com/r.png',
      reward: { type: 'points' as const },
      reward_value: { type: 'fixed' as const, fixed: { value: 5 } },
    };
    await t.services.earningRules.create(accountId, rule);
    expect((await checklist()).states).toEqual(['done', 'done', 'todo', 'todo', 'todo', 'todo']);
    await t.services.earningRules.create(accountId, { ...rule, activity_token: type.token });
    await t.services.vipTiers.create(accountId, { name: 'Gold', milestone: 100 });
    expect((await checklist()).states.slice(2, 4)).toEqual(['done', 'todo']);
    await t.services.pointsProducts.create(accountId, {
      exchange_type: 'fixed',
      points_price: 100,
      reward: { name: '$5 off' },
    });
    const key = await t.services.auth.createApiKey(accountId);
    expect((await checklist()).states).toEqual(['done', 'done', 'done', 'done', 'todo', 'done']);
    expect((await checklist()).first).toBe(true);
    await t.services.auth.revokeApiKey(key.id);
    expect((await checklist()).states[5]).toBe('todo');
    await t.services.auth.createApiKey(accountId);
    await runningProgram(t, accountId);
    const done = await checklist();
    expect(done.states).toEqual(['done', 'done', 'done', 'done', 'done', 'done']);
    // All done: the checklist folds away below the figures.
    expect(done.first).toBe(false);
    expect(done.page).toContain('every step is done');
  });

  it('sets up settings, an activity type, a bound rule, a tier and a product that the API then serves', async () => {
    const browser = await signedIn(t, merchant);
    const key = await t.services.auth.createApiKey(merchant.accountId);
    const api = (url: string) => t.app.inject({ method: 'GET', url, headers: bearer(key.key) });

    // Inactive: an active program needs a qualifying activity type and a landing URL (referrals.test.ts).
    const referral = await browser.submit('/admin/referral-settings', {
      status: 'inactive',
      'sender_reward.name': '$5 off',
      'sender_reward.image.url': 'https://cdn.example.com/5.png',
      'sender_reward.image.content_type': 'image/png',
      'sender_reward.fulfillment': 'code',
      'receiver_reward.name': '10% off',
      'receiver_reward.image.url': 'https://cdn.example.com/10.png',
      'receiver_reward.fulfillment': 'code',
    });
    expect(referral.statusCode, referral.body).toBe(303);
    expect((await api('/v1/referral_settings')).json().referral_settings).toEqual({
      status: 'inactive',
      sender_reward: { name: '$5 off', image: { url: 'https://cdn.example.com/5.png', content_type: 'image/png' } },
      receiver_reward: { name: '10% off', image: { url: 'https://cdn.example.com/10.png', content_type: null } },
    });

    expect((await browser.get('/admin/referral-settings/delete')).body).toContain('Delete the referral program?');
    expect((await browser.submit('/admin/referral-settings/delete')).statusCode).toBe(303);
    expect((await api('/v1/referral_settings')).statusCode).toBe(404);
    expect((await browser.get('/admin/referral-settings/delete')).statusCode).toBe(404);

    expect(
      (await browser.submit('/admin/points-settings', { 'points_label.one': 'Star', 'points_label.other': 'Stars' }))
        .statusCode,
    ).toBe(303);
    expect((await api('/v1/points_settings')).json().points_settings.points_label).toEqual({
      one: 'Star',
      other: 'Stars',
    });

    expect((await browser.submit('/admin/activity-types', { name: 'Place an order' })).statusCode).toBe(303);
    const [type] = await t.services.activityTypes.list(merchant.accountId);
    expect((await browser.get('/admin/activity-types')).body).toContain(`value="${type?.token}"`);

    expect(
      (
        await browser.submit('/admin/vip-tiers', {
          name: 'Gold',
          milestone: '100',
          perks: 'Free shipping\n\nEarly access',
        })
      ).statusCode,
    ).toBe(303);
    const [tier] = (await api('/v1/vip_tiers')).json().vip_tiers;
    expect(tier).toMatchObject({
      name: 'Gold',
      milestone: 100,
      perks: [{ name: 'Free shipping' }, { name: 'Early access' }],
    });

    const created = await browser.submit('/admin/earning-rules', {
      ...RULE,
      activity_token: type?.token as string,
      'earning_limit.type': 'rolling',
      'earning_limit.max': '2',
      'earning_limit.rolling.unit': 'week',
      'earning_limit.rolling.unit_count': '1',
      restricted_to_vip_tier_ids: [String(tier.id)],
    });
    expect(created.statusCode, created.body).toBe(303);
    const [rule] = (await api('/v1/earning_rules')).json().earning_rules;
    expect(rule).toMatchObject({
      name: 'Place an order',
      reward_value: { type: 'fixed', fixed: { value: 50 } },
      earning_limit: { type: 'rolling', max: 2, rolling: { unit: 'week', unit_count: 1 } },
      restricted_to_vip_tier_ids: [tier.id],
    });

    // Edit: the form shows the stored rule, and saving replaces it.
    const edit = await browser.get(`/admin/earning-rules/${rule.id}`);
    expect(fieldValue(edit.body, 'name')).toBe('Place an order');
    expect(fieldValue(edit.body, 'earning_limit.max')).toBe('2');
    expect(edit.body).toContain(`value="${tier.id}" checked`);
    const saved = await browser.submit(`/admin/earning-rules/${rule.id}`, {
      ...RULE,
      name: 'Order placed',
      'reward_value.type': 'variable',
      'reward_value.variable.value': '5',
      'reward_value.variable.per_amount': '1',
      activity_token: type?.token as string,
    });
    expect(saved.statusCode, saved.body).toBe(303);
    expect((await api('/v1/earning_rules')).json().earning_rules[0]).toMatchObject({
      id: rule.id,
      name: 'Order placed',
      reward_value: { type: 'variable', variable: { value: 5, per_amount: 1 } },
      earning_limit: null,
      restricted_to_vip_tier_ids: [],
    });

    // Disable hides it from the API, enable lists it again.
    expect((await browser.submit(`/admin/earning-rules/${rule.id}/disable`)).statusCode).toBe(303);
    expect((await api('/v1/earning_rules')).json().earning_rules).toEqual([]);
    expect((await browser.get('/admin/earning-rules')).body).toContain('Disabled');
    expect((await browser.submit(`/admin/earning-rules/${rule.id}/enable`)).statusCode).toBe(303);
    expect((await api('/v1/earning_rules')).json().earning_rules).toHaveLength(1);

    // A product, then withdrawn.
    const product = await browser.submit('/admin/points-products', {
      'reward.name': '$5 off',
      exchange_type: 'fixed',
      points_price: '500',
      enabled: 'on',
    });
    expect(product.statusCode, product.body).toBe(303);
    const [listed] = (await api('/v1/points_products')).json().points_products;
    expect(listed).toMatchObject({ exchange_type: 'fixed', points_price: 500, exchange_description: '500 Stars' });
    expect((await browser.submit(`/admin/points-products/${listed.id}/disable`)).statusCode).toBe(303);
    expect((await api('/v1/points_products')).json().points_products).toEqual([]);

    // Deleting asks first; the confirmation's form deletes.
    const confirm = await browser.get(`/admin/earning-rules/${rule.id}/delete`);
    expect(confirm.body).toContain('Delete the earning rule Order placed?');
    expect(confirm.body).toContain(`action="/admin/earning-rules/${rule.id}/delete"`);
    expect(await count('earning_rules')).toBe(1);
    expect((await browser.submit(`/admin/earning-rules/${rule.id}/delete`)).statusCode).toBe(303);
    expect(await count('earning_rules')).toBe(0);
    expect((await browser.submit(`/admin/vip-tiers/${tier.id}/delete`)).statusCode).toBe(303);
    expect(await count('vip_tiers')).toBe(0);
  });

  it('shows each refusal next to its field with the API’s message, keeps what was typed, and saves nothing', async () => {
    const browser = await signedIn(t, merchant);
    const refused = await browser.submit('/admin/earning-rules', {
      ...RULE,
      name: '',
      image_url: 'javascript:alert(1)',
      'reward_value.fixed.value': 'lots',
      'earning_limit.type': 'lifetime',
      'earning_limit.max': '0',
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('The form has 4 errors: nothing was saved.');
    expect(fieldError(refused.body, 'name')).toBe('This is required.');
    expect(fieldError(refused.body, 'image_url')).toBe('Enter a web address that starts with https:// (or http://).');
    expect(fieldError(refused.body, 'reward_value.fixed.value')).toBe('Enter a number, such as 5 or 2.5.');
    expect(fieldError(refused.body, 'earning_limit.max')).toBe('Enter at least 1.');
    expect(fieldValue(refused.body, 'reward_value.fixed.value')).toBe('lots');
    expect(fieldValue(refused.body, 'image_url')).toBe('javascript:alert(1)');
    expect(await count('earning_rules')).toBe(0);

    // The same input through the API gets the same messages.
    const customer = await t.services.customers.create(merchant.accountId, { email: 'jane@example.com' });
    const key = await t.services.auth.createApiKey(merchant.accountId);
    const api = await t.app.inject({
      method: 'POST',
      url: '/v1/points_transactions',
      headers: bearer(key.key),
      payload: { points_transaction: { customer_id: customer.id, points_change: 0, description: 'x' } },
    });
    expect(api.statusCode).toBe(400);
    const apiMessage = api.json().error.details[0].message as string;
    const adjusted = await browser.submit(`/admin/customers/${customer.id}/adjust`, {
      points_change: '0',
      description: 'x',
    });
    expect(adjusted.statusCode).toBe(400);
    expect(fieldError(adjusted.body, 'points_change')).toContain(apiMessage);
    expect(await count('points_transactions')).toBe(0);

    const tierRefused = await browser.submit('/admin/vip-tiers', { name: 'Gold', milestone: '-1', perks: 'A' });
    expect(tierRefused.statusCode).toBe(400);
    expect(fieldError(tierRefused.body, 'milestone')).toBe('Enter at least 0 Points.');
    expect(tierRefused.body).toContain('>A</textarea>');
  });

  it('creates an API key shown once, which works at once, and revokes it', async () => {
    const browser = await signedIn(t, merchant);
    const none = await browser.submit('/admin/api-keys', {});
    expect(none.statusCode).toBe(400);
    expect(fieldError(none.body, 'scopes')).toMatch(/must name at least one scope/);
    expect(await count('api_keys')).toBe(0);

    const sent = await browser.submit('/admin/api-keys', {
      name: 'Shop',
      scopes: ['earning_rule:read', 'customer:read'],
    });
    expect(sent.statusCode).toBe(303);
    const created = await browser.get(sent.headers.location as string);
    const key = /id="new-key" class="copy" type="text" readonly value="(api_[^"]+)"/.exec(created.body)?.[1] as string;
    expect(key).toBeTruthy();
    const list = await browser.get('/admin/api-keys');
    expect(list.body).not.toContain(key);
    expect(list.body).toContain('earning_rule:read customer:read');

    expect((await t.app.inject({ method: 'GET', url: '/v1/earning_rules', headers: bearer(key) })).statusCode).toBe(
      200,
    );
    expect((await t.app.inject({ method: 'GET', url: '/v1/vip_tiers', headers: bearer(key) })).statusCode).toBe(403);
    const [summary] = await t.services.auth.listApiKeys(merchant.accountId);
    expect((await browser.submit(`/admin/api-keys/${summary?.id}/revoke`)).statusCode).toBe(303);
    expect((await t.app.inject({ method: 'GET', url: '/v1/earning_rules', headers: bearer(key) })).statusCode).toBe(
      401,
    );
    expect((await browser.get('/admin/api-keys')).body).toContain('Revoked');
  });

  it('finds customers by email, pages them with the API’s cursors, and adjusts points with a reason', async () => {
    const browser = await signedIn(t, merchant);
    for (let i = 1; i <= 55; i++) await t.services.customers.create(merchant.accountId, { email: `c${i}@example.com` });
    const first = await browser.get('/admin/customers');
    expect(first.body).toContain('c55@example.com');
    expect(first.body).not.toContain('>c5@example.com<');
    const next = /rel="next" href="([^"]+)"/.exec(first.body)?.[1]?.replace(/&amp;/g, '&') as string;
    expect(next).toMatch(/^\/admin\/customers\?cursor=/);
    const second = await browser.get(next);
    expect(second.body).toContain('>c5@example.com<');
    expect(second.body).toContain('>c1@example.com<');
    expect(second.body).not.toContain('c55@example.com');

    const found = await browser.get('/admin/customers?email=%20C7@Example.com%20');
    expect(found.body).toContain('>c7@example.com<');
    expect(found.body).not.toContain('>c8@example.com<');
    const id = Number(/href="\/admin\/customers\/(\d+)"/.exec(found.body)?.[1]);

    const noReason = await browser.submit(`/admin/customers/${id}/adjust`, { points_change: '10', description: ' ' });
    expect(noReason.statusCode).toBe(400);
    expect(fieldError(noReason.body, 'description')).toMatch(/is required/);
    const tooMuch = await browser.submit(`/admin/customers/${id}/adjust`, { points_change: '-10', description: 'x' });
    expect(tooMuch.statusCode).toBe(422);
    expect(tooMuch.body).toContain('the balance cannot go below 0');

    const added = await browser.submit(`/admin/customers/${id}/adjust`, {
      points_change: '120',
      description: 'Goodwill',
      internal_note: 'ticket 42',
    });
    expect(added.statusCode, added.body).toBe(303);
    const page = await browser.get(added.headers.location as string);
    expect(page.body).toContain('Points adjusted.');
    expect(page.body).toMatch(/id="balance">120 Points</);
    expect(page.body).toContain('Goodwill');
    expect(page.body).toContain('ticket 42');
    expect((await t.services.customers.get(merchant.accountId, id)).points_balance).toBe(120);

    const state = await browser.submit(`/admin/customers/${id}/state`, { state: 'disabled' });
    expect(state.statusCode).toBe(303);
    expect((await t.services.customers.get(merchant.accountId, id)).state).toBe('disabled');
    const badState = await browser.submit(`/admin/customers/${id}/state`, { state: 'vip' });
    expect(badState.statusCode).toBe(400);
    expect(fieldError(badState.body, 'state')).toBe('Choose one of the options.');

    const overview = await browser.get('/admin/overview');
    expect(overview.body).toMatch(/<span class="figure">55<\/span> customers/);
    expect(overview.body).toMatch(/<span class="figure">120<\/span> Points issued/);
  });

  it('lists the apps the account connected and disconnects one: its tokens are refused at once', async () => {
    const f = await setupOAuth(t, { appName: 'Reviews <App>' });
    const { code } = await authorize(t, f);
    const tokens = (await exchange(t, f, code)).json() as { access_token: string; refresh_token: string };
    const browser = await signedIn(t, { accountId: f.accountId, email: f.email }, f.password);
    const list = await browser.get('/admin/apps');
    expect(list.body).toContain('Reviews &lt;App&gt;');
    expect(list.body).toContain(f.email);
    const grantId = Number(/href="\/admin\/apps\/(\d+)\/revoke"/.exec(list.body)?.[1]);
    const confirm = await browser.get(`/admin/apps/${grantId}/revoke`);
    expect(confirm.body).toContain('Disconnect Reviews &lt;App&gt;?');
    const api = () => t.app.inject({ method: 'GET', url: '/v1/earning_rules', headers: bearer(tokens.access_token) });
    expect((await api()).statusCode).toBe(200);
    expect((await browser.submit(`/admin/apps/${grantId}/revoke`)).statusCode).toBe(303);
    expect((await api()).statusCode).toBe(401);
    expect((await browser.get('/admin/apps')).body).toContain('No app is connected through OAuth.');
  });

  it('lists the tokens the CLI issued to an app beside the connections, and revokes one: refused at once', async () => {
    const f = await setupOAuth(t, { appName: 'Demo <App>' });
    const issue = () =>
      t.services.auth.issueAccessToken({ accountId: f.accountId, clientId: f.clientId, scopes: 'customer:read' });
    const [kept, revoked] = [await issue(), await issue()];
    // Another account's token: never listed here, and not revocable from here.
    const elsewhere = await setupOAuth(t, { appName: 'Elsewhere App' });
    const theirs = await t.services.auth.issueAccessToken({
      accountId: elsewhere.accountId,
      clientId: elsewhere.clientId,
    });
    const browser = await signedIn(t, { accountId: f.accountId, email: f.email }, f.password);
    const list = (await browser.get('/admin/apps')).body;
    expect(list).toContain('No app is connected through OAuth.');
    expect(list).toContain('Demo &lt;App&gt;');
    expect(list).not.toContain('Elsewhere App');
    const ids = Array.from(list.matchAll(/href="\/admin\/apps\/tokens\/(\d+)\/revoke"/g), (m) => Number(m[1]));
    expect(ids).toHaveLength(2);
    for (const { access_token } of [kept, revoked])
      expect(list).toContain(access_token.slice(0, access_token.indexOf('_') + 5));
    expect(list).not.toContain(kept.access_token);

    const theirId = await t.db.kysely
      .selectFrom('access_tokens')
      .select('id')
      .where('account_id', '=', elsewhere.accountId)
      .executeTakeFirstOrThrow();
    expect((await browser.submit(`/admin/apps/tokens/${theirId.id}/revoke`)).statusCode).toBe(404);

    const api = (token: string) =>
      t.app.inject({ method: 'GET', url: '/v1/customers', headers: bearer(token) }).then((r) => r.statusCode);
    const target = await t.db.kysely
      .selectFrom('access_tokens')
      .select('id')
      .where('token_hash', '=', createHash('sha256').update(revoked.access_token).digest('hex'))
      .executeTakeFirstOrThrow();
    expect(await api(revoked.access_token)).toBe(200);
    expect((await browser.get(`/admin/apps/tokens/${target.id}/revoke`)).body).toContain('Revoke Demo &lt;App&gt;');
    expect((await browser.submit(`/admin/apps/tokens/${target.id}/revoke`)).statusCode).toBe(303);
    expect(await api(revoked.access_token)).toBe(401);
    expect(await api(kept.access_token)).toBe(200);
    expect(await api(theirs.access_token)).toBe(200);
    const after = (await browser.get('/admin/apps')).body;
    expect(Array.from(after.matchAll(/href="\/admin\/apps\/tokens\/(\d+)\/revoke"/g))).toHaveLength(1);
    expect((await browser.submit(`/admin/apps/tokens/${target.id}/revoke`)).statusCode).toBe(404);
  });

  it('moves the points once when the adjustment form is sent twice', async () => {
    const browser = await signedIn(t, merchant);
    const customer = await t.services.customers.create(merchant.accountId, { email: 'twice@example.com' });
    const page = await browser.get(`/admin/customers/${customer.id}`);
    const key = /name="idempotency_key" value="([^"]+)"/.exec(page.body)?.[1] as string;
    expect(key).toMatch(/^console-/);
    const form = { idempotency_key: key, points_change: '40', description: 'Welcome gift' };
    expect((await browser.submit(`/admin/customers/${customer.id}/adjust`, form)).statusCode).toBe(303);
    expect((await browser.submit(`/admin/customers/${customer.id}/adjust`, form)).statusCode).toBe(303);
    expect((await t.services.customers.get(merchant.accountId, customer.id)).points_balance).toBe(40);
    expect(await count('points_transactions')).toBe(1);
    // A new page makes a new key: a second gift is a second transaction.
    const again = await browser.get(`/admin/customers/${customer.id}`);
    expect(again.body).not.toContain(key);
  });

  it('adds a customer by hand, refusing a taken email at its field', async () => {
    const browser = await signedIn(t, merchant);
    const added = await browser.submit('/admin/customers', { email: ' Ann@Example.com ', first_name: 'Ann' });
    expect(added.statusCode, added.body).toBe(303);
    const page = await browser.get(added.headers.location as string);
    expect(page.body).toContain('<h1>Ann@Example.com</h1>');
    const taken = await browser.submit('/admin/customers', { email: 'ann@example.com' });
    expect(taken.statusCode).toBe(400);
    expect(fieldError(taken.body, 'email')).toBe('This account already has a customer with this email.');
    expect(fieldValue(taken.body, 'email')).toBe('ann@example.com');
  });

  it("refuses a rule restricted to another account's VIP tier, at the field", async () => {
    const other = await createTenant(t.services, 'Other shop');
    const foreign = await t.services.vipTiers.create(other.accountId, { name: 'Their gold', milestone: 10 });
    const mine = await t.services.vipTiers.create(merchant.accountId, { name: 'Gold', milestone: 10 });
    const browser = await signedIn(t, merchant);
    const refused = await browser.submit('/admin/earning-rules', {
      ...RULE,
      restricted_to_vip_tier_ids: [String(mine.id), String(foreign.id)],
    });
    expect(refused.statusCode).toBe(400);
    expect(fieldError(refused.body, 'restricted_to_vip_tier_ids')).toBe('Choose among this account’s VIP tiers.');
    expect(refused.body).toContain('href="#f-restricted_to_vip_tier_ids"');
    expect(refused.body).toContain('id="f-restricted_to_vip_tier_ids"');
    expect(await count('earning_rules')).toBe(0);
  });

  it('shows a refused state change in the state form, not in the adjustment form', async () => {
    const browser = await signedIn(t, merchant);
    const customer = await t.services.customers.create(merchant.accountId, { email: 'state@example.com' });
    const refused = await browser.submit(`/admin/customers/${customer.id}/state`, { state: 'vip' });
    expect(refused.statusCode).toBe(400);
    const summary = refused.body.indexOf('error-summary');
    expect(summary).toBeGreaterThan(refused.body.indexOf('<h2>State in the program</h2>'));
    expect(fieldError(refused.body, 'points_change')).toBeUndefined();
  });
});

describe('the earning rules list', () => {
  it('says a rule with no activity type never credits, instead of showing it Enabled (issue 49)', async () => {
    const browser = await signedIn(t, merchant);
    const type = await t.services.activityTypes.create(merchant.accountId, { name: 'Order' });
    const rule = (name: string, activity_token?: string) => ({
      name,
      image_url: 'https://cdn.example.com/r.png',
      reward: { type: 'points' as const },
      reward_value: { type: 'fixed' as const, fixed: { value: 5 } },
      earning_limit: null,
      ...(activity_token ? { activity_token } : {}),
    });
    await t.services.earningRules.create(merchant.accountId, [rule('Unbound'), rule('Bound', type.token)]);
    const page = (await browser.get('/admin/earning-rules')).body;
    const row = (name: string) =>
      page.slice(page.indexOf(`>${name}</a>`), page.indexOf('</tr>', page.indexOf(`>${name}</a>`)));
    expect(row('Unbound')).toContain('Never credits');
    expect(row('Unbound')).toContain('no activity type is chosen');
    expect(row('Unbound')).not.toContain('>Enabled<');
    expect(row('Bound')).toContain('>Enabled<');
    expect(row('Bound')).not.toContain('Never credits');
  });
});

describe('the activity types page', () => {
  it('names the field the API reads the token from: activity.token (issue 49)', async () => {
    const browser = await signedIn(t, merchant);
    const page = (await browser.get('/admin/activity-types')).body;
    expect(page).toContain('<code>activity.token</code>');
    expect(page).not.toContain('<code>activity_token</code>');
  });
});
