import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, COPY_CSP } from '../../src/admin/views.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { rowCount } from '../helpers/engine.js';
import { type ConsoleBrowser, createMerchant, fieldError, fieldValue, type Merchant, signedIn } from './helpers.js';

// Issue 30, the console's part: the referral program's page (every field, the API's refusals at
// their fields), the referrals list (status and sender filters, keyset pages, both rewards, why a
// sender got nothing), the program's figures on the overview, and a customer's referral URL and
// the referrals they started.

let t: TestApp;
let merchant: Merchant;
let apiKey: string;
let order: string;
beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t);
  apiKey = (await t.services.auth.createApiKey(merchant.accountId)).key;
  order = (await t.services.activityTypes.create(merchant.accountId, { name: 'Place an order' })).token;
});
afterEach(async () => t.close());

const DAY_MS = 86_400_000;
const LANDING = 'https://shop.example/welcome?utm=loyalty';

/** The whole program as the form sends it (both rewards as codes). */
const PROGRAM = (overrides: Record<string, string> = {}): Record<string, string> => ({
  status: 'active',
  qualifying_activity_token: order,
  minimum_amount: '20.50',
  window_days: '14',
  landing_url: LANDING,
  sender_limit_per_30_days: '100',
  'sender_reward.name': '$5 off coupon',
  'sender_reward.image.url': 'https://cdn.example.com/5.png',
  'sender_reward.image.content_type': 'image/png',
  'sender_reward.fulfillment': 'code',
  'sender_reward.points': '',
  'receiver_reward.name': '10% off',
  'receiver_reward.image.url': 'https://cdn.example.com/10.png',
  'receiver_reward.image.content_type': '',
  'receiver_reward.fulfillment': 'code',
  'receiver_reward.points': '',
  ...overrides,
});

/** Text as the pages' templates escape it. */
const html = (text: string) =>
  text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');

/** The option a select of the form shows as chosen. */
function selected(page: string, name: string): string | undefined {
  const id = `f-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  const select = new RegExp(`<select id="${id}"[^>]*>([\\s\\S]*?)</select>`).exec(page)?.[1] ?? '';
  return /<option value="([^"]*)" selected>/.exec(select)?.[1];
}

/** The radio button of a group that is checked. */
function checkedRadio(page: string, name: string): string | undefined {
  const escaped = name.replace(/\./g, '\\.');
  return new RegExp(`name="${escaped}" value="([^"]*)" checked`).exec(page)?.[1];
}

const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(apiKey), ...(payload ? { payload } : {}) });

async function setProgram(browser: ConsoleBrowser, overrides: Record<string, string> = {}) {
  const saved = await browser.submit('/admin/referral-settings', PROGRAM(overrides));
  expect(saved.statusCode, saved.body).toBe(303);
  expect(saved.headers.location).toBe('/admin/referral-settings?notice=saved');
}

/** A member customer with their referral code. */
async function member(email: string): Promise<{ id: number; code: string; url: string }> {
  const { id } = await t.services.customers.create(merchant.accountId, { email });
  const url = (await t.services.customers.get(merchant.accountId, id)).referral_url as string;
  return { id, code: url.split('/').pop() as string, url };
}

async function refer(code: string, email: string): Promise<number> {
  const made = await api('POST', '/v1/referrals', {
    referral: { referral_code: code, receiver_customer_email: email },
  });
  expect(made.statusCode, made.body).toBe(201);
  return made.json().referral.id as number;
}

async function orderBy(email: string, amount: string): Promise<void> {
  const done = await api('POST', '/v1/activities', {
    activity: { token: order, customer_email: email, properties: { amount } },
  });
  expect(done.statusCode, done.body).toBe(201);
}

describe('the referral program page', () => {
  it('offers every field, with the defaults for a new program and the account’s activity types to choose from', async () => {
    const browser = await signedIn(t, merchant);
    const page = await browser.get('/admin/referral-settings');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('This account has no referral program yet');
    expect(selected(page.body, 'status')).toBe('active');
    expect(page.body).toContain(`<option value="${order}">Place an order (${order})</option>`);
    expect(selected(page.body, 'qualifying_activity_token')).toBe('');
    expect(fieldValue(page.body, 'minimum_amount')).toBe('0');
    expect(fieldValue(page.body, 'window_days')).toBe('30');
    expect(fieldValue(page.body, 'sender_limit_per_30_days')).toBe('50');
    expect(fieldValue(page.body, 'landing_url')).toBe('');
    for (const root of ['sender_reward', 'receiver_reward']) {
      for (const field of ['name', 'image.url', 'image.content_type', 'points']) {
        expect(page.body).toContain(`name="${root}.${field}"`);
      }
      expect(checkedRadio(page.body, `${root}.fulfillment`)).toBe('code');
      expect(page.body).toContain(`name="${root}.fulfillment" value="points"`);
    }
    expect(page.body).toContain('href="/admin/referral-settings" aria-current="page"');
  });

  it('saves every field, shows them back, and GET /v1/referral_settings keeps the spec’s shape', async () => {
    const browser = await signedIn(t, merchant);
    await setProgram(browser, { 'receiver_reward.fulfillment': 'points', 'receiver_reward.points': '500' });
    expect(await t.services.referralSettings.program(merchant.accountId)).toEqual({
      status: 'active',
      qualifying_activity_token: order,
      minimum_amount: '20.5',
      window_days: 14,
      landing_url: LANDING,
      sender_limit_per_30_days: 100,
      sender_reward: {
        name: '$5 off coupon',
        image: { url: 'https://cdn.example.com/5.png', content_type: 'image/png' },
        fulfillment: 'code',
        points: null,
      },
      receiver_reward: {
        name: '10% off',
        image: { url: 'https://cdn.example.com/10.png', content_type: null },
        fulfillment: 'points',
        points: 500,
      },
    });
    const spec = await api('GET', '/v1/referral_settings');
    expect(spec.json()).toEqual({
      referral_settings: {
        status: 'active',
        sender_reward: {
          name: '$5 off coupon',
          image: { url: 'https://cdn.example.com/5.png', content_type: 'image/png' },
        },
        receiver_reward: { name: '10% off', image: { url: 'https://cdn.example.com/10.png', content_type: null } },
      },
    });

    const page = await browser.get('/admin/referral-settings?notice=saved');
    expect(page.body).toContain('Saved.');
    expect(page.body).toContain('<span class="badge on">Running</span>');
    expect(selected(page.body, 'qualifying_activity_token')).toBe(order);
    expect(fieldValue(page.body, 'minimum_amount')).toBe('20.5');
    expect(fieldValue(page.body, 'window_days')).toBe('14');
    expect(fieldValue(page.body, 'landing_url')).toBe(LANDING);
    expect(fieldValue(page.body, 'sender_limit_per_30_days')).toBe('100');
    expect(checkedRadio(page.body, 'sender_reward.fulfillment')).toBe('code');
    expect(checkedRadio(page.body, 'receiver_reward.fulfillment')).toBe('points');
    expect(fieldValue(page.body, 'receiver_reward.points')).toBe('500');

    // Inactive: saved, and said not to run.
    await setProgram(browser, { status: 'inactive' });
    const stopped = await browser.get('/admin/referral-settings');
    expect(stopped.body).toContain('<span class="badge off">Not running</span>');
    expect(selected(stopped.body, 'status')).toBe('inactive');
  });

  // The service checks its schema first, then the program's rules: each pass refuses every field it finds at once.
  it.each([
    [
      'an active program without a qualifying activity type or a landing URL',
      { qualifying_activity_token: '', landing_url: '' },
      {
        qualifying_activity_token: 'This is required for an active program.',
        landing_url: 'This is required for an active program.',
      },
    ],
    [
      'points without the points, a landing URL that is not https, an amount that is not a number',
      { 'sender_reward.fulfillment': 'points', landing_url: 'http://shop.example/', minimum_amount: 'lots' },
      {
        'sender_reward.points': 'Enter how many Points to give, from 1 to 1,000,000.',
        landing_url: "This must be an https:// URL (the merchant's store).",
        minimum_amount: 'This must be a decimal number such as 25.50.',
      },
    ],
    [
      'no way of giving a reward, and numbers out of their bounds or not numbers',
      {
        'sender_reward.fulfillment': '',
        'receiver_reward.fulfillment': 'points',
        'receiver_reward.points': '2.5',
        window_days: '0',
        sender_limit_per_30_days: 'many',
      },
      {
        'sender_reward.fulfillment': 'Choose one of the options.',
        'receiver_reward.points': 'Enter a whole number of Points, such as 50.',
        window_days: 'Enter at least 1.',
        sender_limit_per_30_days: 'Enter a whole number, such as 5.',
      },
    ],
    [
      'another account’s activity type and a negative amount',
      { qualifying_activity_token: 'activity_AAAAAAAAAAAAAAAAAAAA', minimum_amount: '-5' },
      {
        qualifying_activity_token: 'Choose one of this account’s activity types.',
        minimum_amount: 'This must be 0 or more.',
      },
    ],
    [
      'a reward without a name or a valid image URL',
      { 'sender_reward.name': '', 'receiver_reward.image.url': 'not a url' },
      {
        'sender_reward.name': 'This is required.',
        'receiver_reward.image.url': 'Enter a web address that starts with https:// (or http://).',
      },
    ],
  ])('refuses %s at each field, keeps what was typed, and saves nothing', async (_what, overrides, messages) => {
    const browser = await signedIn(t, merchant);
    await setProgram(browser);
    const before = await t.services.referralSettings.program(merchant.accountId);
    const typed = PROGRAM(overrides as Record<string, string>);
    const refused = await browser.submit('/admin/referral-settings', typed);
    expect(refused.statusCode, refused.body).toBe(400);
    const count = Object.keys(messages).length;
    expect(refused.body).toContain(`The form has ${count} ${count === 1 ? 'error' : 'errors'}: nothing was saved.`);
    for (const [field, message] of Object.entries(messages)) {
      expect(fieldError(refused.body, field), field).toBe(html(message));
    }
    // Every field as typed.
    for (const [field, value] of Object.entries(typed)) {
      if (field.endsWith('.fulfillment')) {
        expect(checkedRadio(refused.body, field), field).toBe(value === '' ? undefined : value);
      } else if (field === 'status') {
        expect(selected(refused.body, field)).toBe(value);
      } else if (field !== 'qualifying_activity_token') {
        expect(fieldValue(refused.body, field), field).toBe(html(value));
      }
    }
    expect(await t.services.referralSettings.program(merchant.accountId)).toEqual(before);
  });

  it('deletes the program after a confirmation', async () => {
    const browser = await signedIn(t, merchant);
    await setProgram(browser);
    const confirm = await browser.get('/admin/referral-settings/delete');
    expect(confirm.body).toContain('Delete the referral program?');
    expect((await browser.submit('/admin/referral-settings/delete')).headers.location).toBe(
      '/admin/referral-settings?notice=deleted',
    );
    expect(await t.services.referralSettings.program(merchant.accountId)).toBeUndefined();
    expect((await api('GET', '/v1/referral_settings')).statusCode).toBe(404);
  });
});

describe('the referrals list', () => {
  it('is in the navigation and says when the program does not run', async () => {
    const browser = await signedIn(t, merchant);
    const empty = await browser.get('/admin/referrals');
    expect(empty.statusCode).toBe(200);
    expect(empty.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(empty.body).toContain('<h1>Referrals</h1>');
    expect(empty.body).toContain('href="/admin/referrals" aria-current="page"');
    expect(empty.body).toContain('This account has no referral program');
    expect(empty.body).toContain('No referrals yet.');
    await setProgram(browser, { status: 'inactive' });
    expect((await browser.get('/admin/referrals')).body).toContain('The referral program is not running');
    await setProgram(browser);
    expect((await browser.get('/admin/referrals')).body).not.toContain('class="warning"');
  });

  it('shows each referral’s sender, friend, status, both rewards and dates, and why a sender got nothing', async () => {
    const browser = await signedIn(t, merchant);
    await setProgram(browser, { 'sender_reward.fulfillment': 'points', 'sender_reward.points': '250' });
    const jane = await member('jane@example.com');
    const leaver = await member('leaver@example.com');
    const done = await refer(jane.code, 'Friend.One@Example.com');
    const waiting = await refer(jane.code, 'friend.two@example.com');
    const orphan = await refer(leaver.code, 'friend.three@example.com');
    await orderBy('friend.one@example.com', '25');
    // The sender leaves the program before their friend's order: the referral completes without their reward.
    await t.services.customers.setState(leaver.id, 'disabled');
    await orderBy('friend.three@example.com', '99.99');

    const page = await browser.get('/admin/referrals');
    expect(page.statusCode).toBe(200);
    const row = (id: number) => {
      const match = new RegExp(`<tr id="referral-${id}">([\\s\\S]*?)</tr>`).exec(page.body);
      expect(match, `referral ${id}`).toBeTruthy();
      return (match as RegExpExecArray)[1] as string;
    };
    const friendCode = async (id: number) =>
      (await t.services.referrals.get(merchant.accountId, id)).receiver_reward_fulfillment?.code as string;

    const completed = row(done);
    expect(completed).toContain(`<a href="/admin/customers/${jane.id}">jane@example.com</a>`);
    expect(completed).toContain('Friend.One@Example.com');
    expect(completed).toContain('<span class="badge on">Completed</span>');
    expect(completed).toContain(`10% off<br><code>${await friendCode(done)}</code>`);
    expect(completed).toContain('+250 Points');
    expect(completed).toContain('Referred 2026-01-01 00:00 UTC');
    expect(completed).toContain('Completed 2026-01-01 00:00 UTC');

    const pending = row(waiting);
    expect(pending).toContain('<span class="badge wait">Pending</span>');
    expect(pending).toContain('When the friend’s qualifying order comes');
    expect(pending).toContain('Expires 2026-01-15 00:00 UTC');

    const skipped = row(orphan);
    expect(skipped).toContain('<span class="badge on">Completed</span>');
    expect(skipped).toContain('None: the sender was no longer a member');
    expect(await t.services.referrals.skippedReason(merchant.accountId, orphan)).toBe('sender_not_member');
    // Newest first.
    expect(page.body.indexOf(`referral-${orphan}`)).toBeLessThan(page.body.indexOf(`referral-${done}`));

    // Past its window, a pending referral shows expired (the session is renewed: it expired too).
    t.clock.advance(15 * DAY_MS);
    const later = await (await signedIn(t, merchant)).get('/admin/referrals?status=expired');
    expect(later.body).toContain(`id="referral-${waiting}"`);
    expect(later.body).toContain('<span class="badge off">Expired</span>');
    expect(later.body).toContain('None: the referral expired');
    expect(later.body).toContain('Expired 2026-01-15 00:00 UTC');
    expect(later.body).not.toContain(`id="referral-${done}"`);
  });

  it('filters by status and by sender (an email as typed, or a customer id), and pages with the API’s cursors', async () => {
    const browser = await signedIn(t, merchant);
    await setProgram(browser);
    const jane = await member('jane@example.com');
    const john = await member('john@example.com');
    const janes: number[] = [];
    for (let i = 0; i < 52; i++) janes.push(await refer(jane.code, `friend${i}@example.com`));
    const johns = await refer(john.code, 'johns.friend@example.com');
    await orderBy('friend3@example.com', '30');

    const completed = await browser.get('/admin/referrals?status=completed');
    expect(completed.body.match(/<tr id="referral-/g)).toHaveLength(1);
    expect(completed.body).toContain(`id="referral-${janes[3]}"`);
    expect(completed.body).toContain('<option value="completed" selected>Completed</option>');

    const byEmail = await browser.get('/admin/referrals?sender=%20JANE%40example.com%20');
    expect(byEmail.statusCode).toBe(200);
    expect(byEmail.body).toContain(`Referrals started by <a href="/admin/customers/${jane.id}"`);
    expect(byEmail.body).toContain('id="filter-sender" name="sender" type="text" value="jane@example.com"');
    expect(byEmail.body).not.toContain(`id="referral-${johns}"`);
    // The API's default page of 50, newest first; the next page by the pager's link, bound to the filter.
    expect(byEmail.body.match(/<tr id="referral-/g)).toHaveLength(50);
    const next = /<a rel="next" href="([^"]+)"/.exec(byEmail.body)?.[1]?.replaceAll('&amp;', '&') as string;
    expect(next).toMatch(/^\/admin\/referrals\?sender=JANE%40example\.com&cursor=/);
    const second = await browser.get(next);
    expect(second.statusCode, second.body).toBe(200);
    expect([...second.body.matchAll(/<tr id="referral-(\d+)"/g)].map((m) => Number(m[1]))).toEqual([
      janes[1],
      janes[0],
    ]);
    expect(second.body).toContain('rel="prev"');

    const byId = await browser.get(`/admin/referrals?sender=${john.id}&status=pending`);
    expect([...byId.body.matchAll(/<tr id="referral-(\d+)"/g)].map((m) => Number(m[1]))).toEqual([johns]);
    expect(byId.body).toContain('value="john@example.com"');

    // A sender the account does not have: said so, nothing listed.
    const nobody = await browser.get('/admin/referrals?sender=nobody%40example.com');
    expect(nobody.statusCode).toBe(200);
    expect(nobody.body).toContain('No customer of this account has this email.');
    expect(nobody.body).not.toContain('<tr id="referral-');
    const none = await browser.get('/admin/referrals?status=expired');
    expect(none.body).toContain('No referral matches these filters.');
    // A status that is not one: refused like the API refuses it.
    const bad = await browser.get('/admin/referrals?status=done');
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('status must be one of pending, completed, expired');
  });

  it('shows another account neither its referrals nor its customers', async () => {
    const browser = await signedIn(t, merchant);
    await setProgram(browser);
    const jane = await member('jane@example.com');
    const referral = await refer(jane.code, 'friend@example.com');

    const other = await createMerchant(t, 'Other shop');
    const otherBrowser = await signedIn(t, other);
    const list = await otherBrowser.get('/admin/referrals');
    expect(list.body).toContain('No referrals yet.');
    expect(list.body).not.toContain('friend@example.com');
    for (const [sender, what] of [
      [String(jane.id), 'id'],
      ['jane@example.com', 'email'],
    ]) {
      const filtered = await otherBrowser.get(`/admin/referrals?sender=${encodeURIComponent(sender as string)}`);
      expect(filtered.statusCode).toBe(200);
      expect(filtered.body).toContain(`No customer of this account has this ${what}.`);
      expect(filtered.body).not.toContain('friend@example.com');
      expect(filtered.body).not.toContain(`/admin/customers/${jane.id}`);
    }
    expect((await otherBrowser.get(`/admin/referrals?sender=${jane.id}`)).body).not.toContain('jane@example.com');
    expect((await otherBrowser.get(`/admin/customers/${jane.id}`)).statusCode).toBe(404);
    expect((await browser.get('/admin/referrals')).body).toContain(`id="referral-${referral}"`);
  });
});

describe('the overview’s referral figures', () => {
  it('counts clicks, referrals, completions, conversion and rewards issued in the last 30 days', async () => {
    const browser = await signedIn(t, merchant);
    const none = await browser.get('/admin/overview');
    expect(none.body).toContain('No referral program yet');
    expect(none.body).toMatch(/id="referral-conversion"><span class="figure">0%<\/span>/);

    await setProgram(browser);
    const jane = await member('jane@example.com');
    for (let i = 0; i < 3; i++) {
      const click = await t.app.inject({ method: 'GET', url: `/r/${jane.code}` });
      expect(click.statusCode).toBe(302);
      expect(click.headers.location).toBe(`${LANDING}&ref=${jane.code}`);
    }
    await refer(jane.code, 'one@example.com');
    await refer(jane.code, 'two@example.com');
    await refer(jane.code, 'three@example.com');
    await orderBy('one@example.com', '21');

    const page = await browser.get('/admin/overview');
    const figure = (id: string) => new RegExp(`id="${id}"><span class="figure">([^<]*)</span>`).exec(page.body)?.[1];
    expect(figure('referral-clicks')).toBe('3');
    expect(figure('referral-referrals')).toBe('3');
    expect(figure('referral-completed')).toBe('1');
    expect(figure('referral-conversion')).toBe('33.3%');
    // Three friends' rewards and one sender's.
    expect(figure('referral-rewards')).toBe('4');
    expect(page.body).not.toContain('No referral program yet');
    expect(await t.services.referrals.figures(merchant.accountId)).toEqual({
      clicks: 3,
      referrals: 3,
      completed: 1,
      conversion: 1 / 3,
      rewards: 4,
    });
  });
});

describe('a customer’s referral URL and referrals', () => {
  it('shows a member’s referral URL to copy and the referrals they started, linking to the list', async () => {
    const browser = await signedIn(t, merchant);
    await setProgram(browser);
    const jane = await member('jane@example.com');
    const page = await browser.get(`/admin/customers/${jane.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(
      `<input id="referral-url" class="copy" type="text" readonly value="${jane.url}" autocomplete="off" spellcheck="false" aria-describedby="referral-url-hint">`,
    );
    expect(jane.url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/r\/[0-9A-Za-z]{8,}$/);
    expect(page.body).toContain('data-copy="referral-url"');
    expect(page.body).toContain('<script src="/admin/assets/copy.js" defer></script>');
    expect(page.headers['content-security-policy']).toBe(COPY_CSP);
    expect(page.body).toContain('This customer has referred nobody yet.');
    expect(page.body).not.toContain('is not running');

    const friends = [];
    for (let i = 0; i < 6; i++) friends.push(await refer(jane.code, `pal${i}@example.com`));
    await orderBy('pal5@example.com', '100');
    const after = await browser.get(`/admin/customers/${jane.id}`);
    const table = /<table class="stack" id="started-referrals">([\s\S]*?)<\/table>/.exec(after.body)?.[1] ?? '';
    // The latest five, newest first, each friend linking to their own page.
    expect(table).toContain('Friends this customer referred, the latest 5');
    expect([...table.matchAll(/>(pal\d)@example\.com</g)].map((m) => m[1])).toEqual([
      'pal5',
      'pal4',
      'pal3',
      'pal2',
      'pal1',
    ]);
    const pal5 = (await t.services.referrals.get(merchant.accountId, friends[5] as number)).receiver_customer?.id;
    expect(table).toContain(`<a href="/admin/customers/${pal5}">pal5@example.com</a>`);
    expect(table).toContain('<span class="badge on">Completed</span>');
    expect(table).toContain('<span class="badge wait">Pending</span>');
    expect(after.body).toContain(`<a href="/admin/referrals?sender=${jane.id}">All referrals of this customer`);
    const all = await browser.get(`/admin/referrals?sender=${jane.id}`);
    expect(all.body.match(/<tr id="referral-/g)).toHaveLength(6);

    // A refused adjustment shows the page again: its Copy button still allowed.
    const refused = await browser.submit(`/admin/customers/${jane.id}/adjust`, {
      points_change: 'x',
      description: 'y',
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['content-security-policy']).toBe(COPY_CSP);
    expect(refused.body).toContain('data-copy="referral-url"');
  });

  it('says when the program does not run, and a customer who never was a member has no URL and no script', async () => {
    const browser = await signedIn(t, merchant);
    const jane = await member('jane@example.com');
    const stopped = await browser.get(`/admin/customers/${jane.id}`);
    expect(stopped.body).toContain('The referral program is not running, so it leads nowhere for now');

    // A candidate (made by an identity without enrolment) gets no code.
    await t.db.kysely
      .updateTable('customers')
      .set({ state: 'candidate', referral_code: null })
      .where('id', '=', jane.id)
      .execute();
    const candidate = await browser.get(`/admin/customers/${jane.id}`);
    expect(candidate.statusCode).toBe(200);
    expect(candidate.body).toContain('No referral URL: a customer gets one when they first become a member.');
    expect(candidate.body).not.toContain('<script');
    expect(candidate.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(await rowCount(t.db.kysely, 'referrals')).toBe(0);
  });
});
