import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/admin/views.js';
import { CREDENTIAL_CACHE_MS, LAST_USED_INTERVAL_MS, UNNAMED_KEY } from '../../src/auth/service.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { rowCount } from '../helpers/engine.js';
import { eventually } from '../helpers/wait.js';
import { createMerchant, fieldError, type Merchant, signedIn } from './helpers.js';

// Issue 27, item 4: API keys in the console have names, created and last-used times, are listed
// newest first, get no scope unless the merchant ticks it, and a new key is shown once on a page
// reached by a redirect (post/redirect/get), so reloading it makes no second key.

let t: TestApp;
let merchant: Merchant;
beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t);
});
afterEach(async () => t.close());

const keyOnPage = (body: string) =>
  /id="new-key" class="copy" type="text" readonly value="(api_[^"]+)"/.exec(body)?.[1];
const listedNames = (body: string) => [...body.matchAll(/<tr>\s*<th scope="row">([^<]*)<\/th>/g)].map((m) => m[1]);
const keyRows = () => t.db.kysely.selectFrom('api_keys').selectAll().orderBy('id').execute();

describe('creating a key', () => {
  it('redirects to a page that shows the key once; a reload shows it no more and makes no second key', async () => {
    const browser = await signedIn(t, merchant);
    const sent = await browser.submit('/admin/api-keys', { name: 'Web shop', scopes: ['customer:read'] });
    expect(sent.statusCode, sent.body).toBe(303);
    const location = sent.headers.location as string;
    expect(location).toMatch(/^\/admin\/api-keys\/\d+\/created$/);
    expect(sent.body).not.toMatch(/api_[0-9A-Za-z]{20}/);

    const shown = await browser.get(location);
    expect(shown.statusCode).toBe(200);
    const key = keyOnPage(shown.body) as string;
    expect(key).toMatch(/^api_[0-9A-Za-z]{40}$/);
    expect(shown.body).toContain('Web shop');
    expect((await t.app.inject({ method: 'GET', url: '/v1/customers', headers: bearer(key) })).statusCode).toBe(200);

    const reloaded = await browser.get(location);
    expect(reloaded.statusCode).toBe(200);
    expect(reloaded.body).not.toContain(key);
    expect(keyOnPage(reloaded.body)).toBeUndefined();
    expect(reloaded.body).toContain('API key shown already');
    expect(await rowCount(t.db.kysely, 'api_keys')).toBe(1);
  });

  it('stores the key only hashed, and sealed for the page until it is shown', async () => {
    const browser = await signedIn(t, merchant);
    const sent = await browser.submit('/admin/api-keys', { name: 'POS', scopes: ['activity:write'] });
    const [row] = await keyRows();
    expect(row?.sealed_key).toBeTruthy();
    const key = keyOnPage((await browser.get(sent.headers.location as string)).body) as string;
    expect(JSON.stringify(row)).not.toContain(key.slice(4));
    expect((await keyRows())[0]?.sealed_key).toBeNull();
  });

  it('shows the key only to the session that made it: a colleague neither sees nor spends it', async () => {
    const maker = await signedIn(t, merchant);
    const sent = await maker.submit('/admin/api-keys', { name: 'Shared', scopes: ['customer:read'] });
    const location = sent.headers.location as string;
    const colleague = await signedIn(t, merchant);
    const theirs = await colleague.get(location);
    expect(theirs.statusCode).toBe(200);
    expect(keyOnPage(theirs.body)).toBeUndefined();
    expect(keyOnPage((await maker.get(location)).body)).toMatch(/^api_/);
  });

  it('shows a key no more once 10 minutes have passed without the page being opened', async () => {
    const browser = await signedIn(t, merchant);
    const sent = await browser.submit('/admin/api-keys', { name: 'Late', scopes: ['customer:read'] });
    t.clock.advance(10 * 60 * 1000 + 1);
    const page = await browser.get(sent.headers.location as string);
    expect(keyOnPage(page.body)).toBeUndefined();
    expect((await keyRows())[0]?.sealed_key).toBeNull();
  });

  it("is 404 for another account's key", async () => {
    const other = await createMerchant(t, 'Other');
    const theirs = await signedIn(t, other);
    const sent = await theirs.submit('/admin/api-keys', { name: 'Theirs', scopes: ['customer:read'] });
    const mine = await signedIn(t, merchant);
    expect((await mine.get(sent.headers.location as string)).statusCode).toBe(404);
    expect(keyOnPage((await theirs.get(sent.headers.location as string)).body)).toMatch(/^api_/);
  });

  it('offers no scope pre-checked, and refuses a key without a name or a scope at its field', async () => {
    const browser = await signedIn(t, merchant);
    const page = await browser.get('/admin/api-keys');
    expect(page.body).toContain('name="scopes"');
    expect(page.body).not.toMatch(/name="scopes"[^>]* checked/);

    const nothing = await browser.submit('/admin/api-keys', { name: '  ' });
    expect(nothing.statusCode).toBe(400);
    expect(fieldError(nothing.body, 'name')).toMatch(/required/i);
    const noScope = await browser.submit('/admin/api-keys', { name: 'Web shop' });
    expect(noScope.statusCode).toBe(400);
    expect(fieldError(noScope.body, 'scopes')).toBeTruthy();
    expect(noScope.body).toContain('value="Web shop"');
    const tooLong = await browser.submit('/admin/api-keys', { name: 'x'.repeat(101), scopes: ['customer:read'] });
    expect(tooLong.statusCode).toBe(400);
    expect(fieldError(tooLong.body, 'name')).toBeTruthy();
    expect(await rowCount(t.db.kysely, 'api_keys')).toBe(0);
  });

  it('serves the copy button as a script file the key page alone may run; no page has inline script', async () => {
    const browser = await signedIn(t, merchant);
    const sent = await browser.submit('/admin/api-keys', { name: 'Copy me', scopes: ['customer:read'] });
    const shown = await browser.get(sent.headers.location as string);
    expect(shown.headers['content-security-policy']).toBe(`${CONSOLE_CSP}; script-src 'self'`);
    expect(shown.body).toContain('<script src="/admin/assets/copy.js" defer></script>');
    expect(shown.body.match(/<script/g)).toHaveLength(1);
    expect(shown.body).toMatch(/<button type="button" class="secondary" data-copy="new-key"[^>]* hidden>/);
    const again = await browser.get(sent.headers.location as string);
    expect(again.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(again.body).not.toContain('<script');
    expect((await browser.get('/admin/api-keys')).body).not.toContain('<script');

    const script = await t.app.inject({ method: 'GET', url: '/admin/assets/copy.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.body).toContain('navigator.clipboard.writeText');
  });
});

describe('the list', () => {
  it('lists keys newest first with their names and created times; keys made without a name are "Unnamed key"', async () => {
    const browser = await signedIn(t, merchant);
    await t.services.auth.createApiKey(merchant.accountId, ['customer:read']);
    t.clock.advance(60_000);
    for (const name of ['First', 'Second <b>']) {
      expect((await browser.submit('/admin/api-keys', { name, scopes: ['customer:read'] })).statusCode).toBe(303);
      t.clock.advance(60_000);
    }
    const list = await browser.get('/admin/api-keys');
    expect(list.body).toContain('API keys, newest first');
    expect(listedNames(list.body)).toEqual(['Second &lt;b&gt;', 'First', UNNAMED_KEY]);
    expect(list.body).toContain('2026-01-01 00:02 UTC');
    expect(list.body).toContain('2026-01-01 00:00 UTC');
    expect(list.body).toContain('Never');
  });

  it('records last use at most once per hour per key, and says how precise it is', async () => {
    const browser = await signedIn(t, merchant);
    const { key, id } = await t.services.auth.createApiKey(merchant.accountId, ['customer:read'], {
      name: 'Busy',
    });
    const lastUsed = async () =>
      (await t.db.kysely.selectFrom('api_keys').select('last_used_at').where('id', '=', id).executeTakeFirstOrThrow())
        .last_used_at;
    // The use is recorded after the answer (a read never waits for a write): wait for the row to
    // show `expected`, then check it stays (a second write would come within the same moments).
    const recorded = async (expected: number) => {
      await eventually(async () => Number(await lastUsed()) === expected, 5000, 20);
      await sleep(50);
      expect(Number(await lastUsed())).toBe(expected);
    };
    const call = async () =>
      expect((await t.app.inject({ method: 'GET', url: '/v1/customers', headers: bearer(key) })).statusCode).toBe(200);
    // Each step waits out the credential cache, so every call below reads the key live.
    const live = () => sleep(CREDENTIAL_CACHE_MS + 100);

    expect(await lastUsed()).toBeNull();
    const first = t.clock.now();
    await call();
    await recorded(first);
    expect((await browser.get('/admin/api-keys')).body).toContain('Within the last hour');

    t.clock.advance(LAST_USED_INTERVAL_MS - 1);
    await live();
    await call();
    await recorded(first);

    t.clock.advance(2);
    await live();
    await call();
    await recorded(first + LAST_USED_INTERVAL_MS + 1);

    t.clock.advance(3 * LAST_USED_INTERVAL_MS);
    // Hours later: the earlier session has ended (idle expiry), so sign in again.
    const page = (await (await signedIn(t, merchant)).get('/admin/api-keys')).body;
    expect(page).not.toContain('Within the last hour');
    expect(page).toContain('2026-01-01 01:00 UTC');
    expect(page).toContain('recorded at most once an hour');
  });

  it('gives a key made before names existed a name in the migration', async () => {
    await t.db.kysely
      .insertInto('api_keys')
      .values({
        account_id: merchant.accountId,
        key_hash: 'f'.repeat(64),
        key_prefix: 'api_Old1…',
        scopes: 'customer:read',
        created_at: 1,
        revoked_at: null,
      })
      .execute();
    const [details] = await t.services.auth.apiKeyDetails(merchant.accountId);
    expect(details?.name).toBe('Unnamed key');
  });
});
