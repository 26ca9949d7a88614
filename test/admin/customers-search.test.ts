import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleBrowser, createMerchant, fieldError, type Merchant, signedIn } from './helpers.js';

// Issue 27, item 6: the console finds customers by part of an email or a name, filters them by
// state and VIP tier and shows each one's tier; a customer's page shows the rewards issued to
// them with their codes, and who on the staff made each adjustment (the API's answer unchanged).

let t: TestApp;
let merchant: Merchant;
let browser: ConsoleBrowser;
beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t);
  browser = await signedIn(t, merchant);
});
afterEach(async () => t.close());

const customer = (email: string, first_name?: string, last_name?: string) =>
  t.services.customers.create(merchant.accountId, {
    email,
    ...(first_name ? { first_name } : {}),
    ...(last_name ? { last_name } : {}),
  });
/** The emails a customers page lists, in order. */
const listed = (body: string) => [...body.matchAll(/href="\/admin\/customers\/\d+">([^<]*)</g)].map((m) => m[1]);
const search = async (query: string) => {
  const page = await browser.get(`/admin/customers?${query}`);
  expect(page.statusCode, page.body).toBe(200);
  return page;
};

describe('the customer search', () => {
  it('finds part of an email or a name, whatever the case, newest first', async () => {
    await customer('jane.doe@shop.example', 'Jane', 'Doe');
    await customer('bob@mail.example', 'Robert', 'Janeway');
    await customer('carol@shop.example', 'Carol', 'King');
    expect(listed((await search('q=JANE')).body)).toEqual(['bob@mail.example', 'jane.doe@shop.example']);
    expect(listed((await search('q=shop.ex')).body)).toEqual(['carol@shop.example', 'jane.doe@shop.example']);
    expect(listed((await search('q=%20carol%20king%20')).body)).toEqual(['carol@shop.example']);
    const none = await search('q=nobody');
    expect(listed(none.body)).toEqual([]);
    expect(none.body).toContain('No customer matches this search.');
    // The form shows the search it ran.
    expect((await search('q=JANE')).body).toContain('name="q" type="text" value="JANE"');
  });

  it('takes % and _ in the search literally, not as wildcards', async () => {
    await customer('100%off@shop.example');
    await customer('100xoff@shop.example');
    await customer('a_b@shop.example');
    await customer('axb@shop.example');
    await customer('slash@shop.example', 'Back\\Slash');
    expect(listed((await search('q=100%25off')).body)).toEqual(['100%off@shop.example']);
    expect(listed((await search('q=a_b')).body)).toEqual(['a_b@shop.example']);
    expect(listed((await search('q=%25')).body)).toEqual(['100%off@shop.example']);
    expect(listed((await search('q=_')).body)).toEqual(['a_b@shop.example']);
    expect(listed((await search('q=k%5Cs')).body)).toEqual(['slash@shop.example']);
  });

  it('still reads the earlier form’s email parameter', async () => {
    await customer('c7@example.com');
    await customer('c8@example.com');
    expect(listed((await search('email=%20C7@Example.com%20')).body)).toEqual(['c7@example.com']);
  });

  it('refuses a search longer than 100 characters, and an unknown state or tier, with a 400 page', async () => {
    expect((await browser.get(`/admin/customers?q=${'a'.repeat(101)}`)).statusCode).toBe(400);
    expect((await search(`q=${'a'.repeat(100)}`)).statusCode).toBe(200);
    const state = await browser.get('/admin/customers?state=vip');
    expect(state.statusCode).toBe(400);
    expect(state.body).toContain('must be one of candidate, member, disabled');
    expect((await browser.get('/admin/customers?tier=gold')).statusCode).toBe(400);
  });

  it('refuses a NUL character in any search with a 400 page on both engines (it was a 500 on PostgreSQL)', async () => {
    for (const url of ['/admin/customers?q=a%00@x.com', '/admin/referrals?sender=%00', '/admin/rewards?code=A%00B']) {
      const page = await browser.get(url);
      expect(page.statusCode, url).toBe(400);
      expect(page.body, url).toContain('must not contain a NUL character');
    }
    expect((await search('q=a@x.com')).statusCode).toBe(200);
  });

  it('filters by state and by VIP tier, and shows each customer’s tier', async () => {
    const gold = await t.services.vipTiers.create(merchant.accountId, { name: 'Gold', milestone: 100 });
    const rich = await customer('rich@example.com');
    await customer('poor@example.com');
    const gone = await customer('gone@example.com');
    await t.services.pointsTransactions.adjust(merchant.accountId, { customer_id: rich.id, points_change: 150 });
    await t.services.customers.setState(gone.id, 'disabled');

    const all = await search('');
    expect(all.body).toMatch(/rich@example\.com<\/a><\/th>[\s\S]*?<td data-label="VIP tier">Gold<\/td>/);
    expect(listed((await search(`tier=${gold.id}`)).body)).toEqual(['rich@example.com']);
    expect(listed((await search('tier=none')).body)).toEqual(['gone@example.com', 'poor@example.com']);
    expect(listed((await search('state=disabled')).body)).toEqual(['gone@example.com']);
    expect(listed((await search('state=member&tier=none')).body)).toEqual(['poor@example.com']);
    expect(listed((await search('state=member&q=RICH')).body)).toEqual(['rich@example.com']);
    expect((await search(`tier=${gold.id}`)).body).toMatch(new RegExp(`<option value="${gold.id}" selected>Gold`));
  });

  it('pages a search with keyset cursors that keep the search, and refuses them for another search', async () => {
    for (let i = 1; i <= 55; i++) await customer(`match${i}@example.com`);
    await customer('other@example.com');
    const first = await search('q=match');
    expect(listed(first.body)).toHaveLength(50);
    expect(listed(first.body)[0]).toBe('match55@example.com');
    const next = /rel="next" href="([^"]+)"/.exec(first.body)?.[1]?.replace(/&amp;/g, '&') as string;
    expect(next).toMatch(/^\/admin\/customers\?q=match&cursor=/);
    const second = await search(next.split('?')[1] as string);
    expect(listed(second.body)).toEqual([
      'match5@example.com',
      'match4@example.com',
      'match3@example.com',
      'match2@example.com',
      'match1@example.com',
    ]);
    const cursor = new URL(next, 'http://x').searchParams.get('cursor') as string;
    const elsewhere = await browser.get(`/admin/customers?q=other&cursor=${encodeURIComponent(cursor)}`);
    expect(elsewhere.statusCode).toBe(400);
  });
});

describe('a customer’s page', () => {
  it('shows the rewards issued to the customer with their codes', async () => {
    const jane = await customer('jane@example.com');
    await t.services.pointsTransactions.adjust(merchant.accountId, { customer_id: jane.id, points_change: 100 });
    const product = (await t.services.pointsProducts.create(merchant.accountId, {
      exchange_type: 'fixed',
      points_price: 10,
      reward: { name: '$5 off <now>', description: 'once', image_url: 'https://cdn.example.com/r.png' },
    })) as { id: number };
    await t.services.pointsProducts.purchase(merchant.accountId, product.id, { customer_id: jane.id });
    const [reward] = await t.db.kysely.selectFrom('reward_fulfillments').selectAll().execute();
    const page = await browser.get(`/admin/customers/${jane.id}`);
    expect(page.body).toContain('Rewards issued');
    expect(page.body).toContain('$5 off &lt;now&gt;');
    expect(page.body).toContain(`<code>${reward?.code}</code>`);
    expect(page.body).toContain('Points purchase');

    const other = await customer('other@example.com');
    const theirs = await browser.get(`/admin/customers/${other.id}`);
    expect(theirs.body).toContain('No rewards issued yet.');
    expect(theirs.body).not.toContain(reward?.code as string);
  });

  it('records and shows the staff member who made an adjustment; the API’s transaction is unchanged', async () => {
    const jane = await customer('jane@example.com');
    const sent = await browser.submit(`/admin/customers/${jane.id}/adjust`, {
      points_change: '25',
      description: 'Goodwill',
    });
    expect(sent.statusCode, sent.body).toBe(303);

    const rows = await t.db.kysely.selectFrom('points_transactions').selectAll().execute();
    expect(rows).toHaveLength(1);
    const user = await t.db.kysely
      .selectFrom('users')
      .select('id')
      .where('email_normalized', '=', merchant.email.toLowerCase())
      .executeTakeFirstOrThrow();
    expect(Number(rows[0]?.created_by_user_id)).toBe(Number(user.id));

    // An API key of this account posts another adjustment: no staff member.
    const { key } = await t.services.auth.createApiKey(merchant.accountId);
    const api = await t.app.inject({
      method: 'POST',
      url: '/v1/points_transactions',
      headers: bearer(key),
      payload: { points_transaction: { customer_id: jane.id, points_change: -5, description: 'Through the API' } },
    });
    expect(api.statusCode, api.body).toBe(201);
    const byApi = await t.db.kysely
      .selectFrom('points_transactions')
      .select('created_by_user_id')
      .where('id', '=', api.json().points_transaction.id)
      .executeTakeFirstOrThrow();
    expect(byApi.created_by_user_id).toBeNull();

    const page = await browser.get(`/admin/customers/${jane.id}`);
    expect(page.statusCode, page.body).toBe(200);
    expect(page.body).toMatch(/<th scope="col">By<\/th>/);
    expect(page.body).toMatch(
      new RegExp(`Goodwill</td>.*<td data-label="By" class="wrap-anywhere">${merchant.email}</td>`),
    );
    expect(page.body).toMatch(/Through the API<\/td>.*<td data-label="By" class="wrap-anywhere">API<\/td>/);

    // The API's points transaction keeps its shape: the staff member is not in it.
    const fields = [
      'activity_id',
      'created_at',
      'customer_id',
      'description',
      'id',
      'internal_note',
      'points_change',
      'points_purchase_id',
      'updated_at',
    ];
    const one = await t.app.inject({
      method: 'GET',
      url: `/v1/points_transactions/${rows[0]?.id}`,
      headers: bearer(key),
    });
    expect(Object.keys(one.json().points_transaction).sort()).toEqual(fields);
    const list = await t.app.inject({ method: 'GET', url: '/v1/points_transactions', headers: bearer(key) });
    for (const entry of list.json().points_transactions) expect(Object.keys(entry).sort()).toEqual(fields);
    expect(JSON.stringify(list.json())).not.toContain('created_by');
  });

  it('refuses removing more than the balance at the points field, in the account’s words', async () => {
    const jane = await customer('jane@example.com');
    await t.services.pointsSettings.set(merchant.accountId, { points_label: { one: 'Coin', other: 'Coins' } });
    const refused = await browser.submit(`/admin/customers/${jane.id}/adjust`, {
      points_change: '-1000',
      description: 'Oops',
    });
    expect(refused.statusCode).toBe(422);
    const message = fieldError(refused.body, 'points_change') as string;
    expect(message).toContain('Coins');
    expect(message).not.toContain(`customer ${jane.id}`);
    expect(await t.db.kysely.selectFrom('points_transactions').selectAll().execute()).toEqual([]);
  });
});
