import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import {
  authorizeUrl,
  Browser,
  hiddenField,
  hiddenFields,
  type OAuthFixture,
  REDIRECT_URI,
  setupOAuth,
  signIn,
} from './helpers.js';

let t: TestApp;
let f: OAuthFixture;
beforeEach(async () => {
  t = await createTestApp();
  f = await setupOAuth(t);
});
afterEach(async () => t.close());

const url = (extra: Record<string, string> = {}) =>
  authorizeUrl({ client_id: f.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state: 'st-1', ...extra });

const count = async (table: 'oauth_codes' | 'oauth_sessions') =>
  Number(
    (
      await t.db.kysely
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('the sign-in and consent pages', () => {
  it('are small accessible HTML with the clickjacking and caching headers', async () => {
    const browser = new Browser(t.app);
    const page = await browser.get(url());
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.body).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(page.body).toContain('<label for="email">Email</label>');
    expect(page.body).toContain('<input id="email" name="email" type="email" autocomplete="username"');
    expect(page.body).toContain('<label for="password">Password</label>');
    expect(page.body).toContain('<input id="password" name="password" type="password" autocomplete="current-password"');
    expect(page.body).not.toMatch(/<script/i);
    expect(page.body.match(/<h1>/g)).toHaveLength(1);

    const consent = await signIn(
      browser,
      url({ scope: 'customer_identity:write earning_rule:read' }),
      f.email,
      f.password,
    );
    expect(consent).toContain('<h1>Allow Reviews App to access your loyalty program?</h1>');
    expect(consent).toContain('Read your earning rules');
    expect(consent).toContain('Create and update customer identities (links to your customers)');
    expect(consent).not.toContain('Read your referral program settings');
    expect(consent).toContain(f.email);
    expect(consent).toContain('Acme Store');
    // Approve comes first in the DOM, so first in the focus order.
    expect(consent.indexOf('value="approve"')).toBeLessThan(consent.indexOf('value="deny"'));
    const again = await browser.get(url());
    expect(again.headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https://shop-app.example; frame-ancestors 'none'; base-uri 'none'",
    );
  });

  it('escapes every value they show', async () => {
    const evil = await setupOAuth(t, { appName: `<script>alert(1)</script> & "Co" 'x'` });
    const browser = new Browser(t.app);
    const state = `"><script>alert(2)</script>`;
    const page = await browser.get(
      authorizeUrl({ client_id: evil.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state }),
    );
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('<script>');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Co&quot; &#39;x&#39;');
    expect(page.body).toContain('value="&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"');
    expect(hiddenField(page.body, 'state')).toBe(state);
    // A failed sign-in shows the typed email again, escaped.
    const failed = await browser.post('/oauth2/sign-in', {
      ...hiddenFields(page.body),
      email: '"><img src=x onerror=alert(3)>@x.example',
      password: 'wrong password!',
    });
    expect(failed.statusCode).toBe(400);
    expect(failed.body).not.toContain('<img');
  });

  it('sets an HttpOnly, SameSite=Lax session cookie on /oauth2, Secure when the request is HTTPS', async () => {
    const plain = await t.app.inject(url());
    const cookie = String(plain.headers['set-cookie']);
    expect(cookie).toMatch(/^loyalty_oauth_session=oas_[0-9A-Za-z]{40};/);
    expect(cookie).toContain('Path=/oauth2');
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Lax');
    expect(cookie).not.toContain('Secure');

    const proxied = await createTestApp({ TRUST_PROXY: 'true' });
    try {
      const g = await setupOAuth(proxied);
      const response = await proxied.app.inject({
        url: authorizeUrl({ client_id: g.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state: 's' }),
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(response.statusCode).toBe(200);
      expect(String(response.headers['set-cookie'])).toContain('Secure');
    } finally {
      await proxied.close();
    }
  });

  it('are refused over plain HTTP from another machine (the transport rule), as a page', async () => {
    const response = await t.app.inject({ url: url(), remoteAddress: '203.0.113.9' });
    expect(response.statusCode).toBe(403);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.body).toContain('HTTPS');
  });

  it('replace the session at sign-in (no fixation), and sign-out returns to the sign-in form', async () => {
    const browser = new Browser(t.app);
    await browser.get(url());
    const before = browser.cookies.get('loyalty_oauth_session')?.value;
    const consent = await signIn(browser, url(), f.email, f.password);
    const after = browser.cookies.get('loyalty_oauth_session')?.value;
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    const out = await browser.post('/oauth2/sign-out', hiddenFields(consent));
    expect(out.statusCode).toBe(303);
    const page = await browser.get(out.headers.location as string);
    expect(page.body).toContain('action="/oauth2/sign-in"');
  });

  it('store session ids hashed only', async () => {
    const browser = new Browser(t.app);
    await browser.get(url());
    const id = browser.cookies.get('loyalty_oauth_session')?.value as string;
    const rows = await t.db.kysely.selectFrom('oauth_sessions').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(id);
  });

  it('expire after 8 hours', async () => {
    const browser = new Browser(t.app);
    const consent = await signIn(browser, url(), f.email, f.password);
    t.clock.advance(8 * 3600 * 1000 + 1);
    const late = await browser.post('/oauth2/authorize', { ...hiddenFields(consent), decision: 'approve' });
    // Signed out: back to the sign-in page, and no code.
    expect(late.statusCode).toBe(303);
    expect(late.headers.location).toMatch(/^\/oauth2\/authorize\?/);
    expect((await browser.get(late.headers.location as string)).body).toContain('action="/oauth2/sign-in"');
    expect(await count('oauth_codes')).toBe(0);
  });
});

describe('CSRF protection', () => {
  it('refuses a sign-in POST with a missing or wrong token, or without the session cookie', async () => {
    const browser = new Browser(t.app);
    const page = await browser.get(url());
    const fields = hiddenFields(page.body);
    const credentials = { email: f.email, password: f.password };
    for (const csrf of [undefined, '', 'wrong', `${fields.csrf_token}x`]) {
      const response = await browser.post('/oauth2/sign-in', { ...fields, ...credentials, csrf_token: csrf });
      expect(response.statusCode).toBe(403);
      expect(response.headers.location).toBeUndefined();
      expect(response.headers['set-cookie']).toBeUndefined();
    }
    const stranger = new Browser(t.app);
    expect((await stranger.post('/oauth2/sign-in', { ...fields, ...credentials })).statusCode).toBe(403);
    // Another browser's token does not fit this session either.
    const other = new Browser(t.app);
    const otherPage = await other.get(url());
    const response = await browser.post('/oauth2/sign-in', {
      ...fields,
      ...credentials,
      csrf_token: hiddenField(otherPage.body, 'csrf_token'),
    });
    expect(response.statusCode).toBe(403);
    // Still signed out: the next page is the sign-in form.
    expect((await browser.get(url())).body).toContain('action="/oauth2/sign-in"');
  });

  it('refuses a consent POST with a missing or wrong token, issuing no code', async () => {
    const browser = new Browser(t.app);
    const consent = await signIn(browser, url(), f.email, f.password);
    const fields = hiddenFields(consent);
    for (const csrf of [undefined, '', 'wrong']) {
      const response = await browser.post('/oauth2/authorize', { ...fields, csrf_token: csrf, decision: 'approve' });
      expect(response.statusCode).toBe(403);
      expect(response.headers.location).toBeUndefined();
    }
    // The token of the anonymous session before sign-in is no longer valid either.
    const stale = new Browser(t.app);
    expect((await stale.post('/oauth2/authorize', { ...fields, decision: 'approve' })).statusCode).toBe(403);
    expect(await count('oauth_codes')).toBe(0);
    expect((await browser.post('/oauth2/sign-out', { ...fields, csrf_token: 'wrong' })).statusCode).toBe(403);
  });
});

describe('signing in', () => {
  const attempt = async (browser: Browser, email: string, password: string) => {
    const page = await browser.get(url());
    return browser.post('/oauth2/sign-in', { ...hiddenFields(page.body), email, password });
  };
  const message = (body: string) => /<p class="error" role="alert" id="sign-in-error">([^<]*)<\/p>/.exec(body)?.[1];

  it('a wrong password and an unknown email get the same answer', async () => {
    const wrong = await attempt(new Browser(t.app), f.email, 'not the password');
    const unknown = await attempt(new Browser(t.app), 'nobody@acme.example', 'not the password');
    expect(wrong.statusCode).toBe(400);
    expect(unknown.statusCode).toBe(400);
    expect(message(wrong.body)).toBeDefined();
    expect(message(wrong.body)).toBe(message(unknown.body));
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('matches the email case-insensitively', async () => {
    const response = await attempt(new Browser(t.app), f.email.toUpperCase(), f.password);
    expect(response.statusCode).toBe(303);
  });

  it('an empty email or password is asked for again', async () => {
    expect((await attempt(new Browser(t.app), '', f.password)).statusCode).toBe(400);
    expect((await attempt(new Browser(t.app), f.email, '')).statusCode).toBe(400);
  });

  it('after 5 failures for an email from one address, slows it there (even the right password waits)', async () => {
    for (let i = 0; i < 5; i++) expect((await attempt(new Browser(t.app), f.email, `guess ${i}`)).statusCode).toBe(400);
    const blocked = await attempt(new Browser(t.app), f.email, f.password);
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(message(blocked.body)).toMatch(/Too many failed sign-ins/);
    // The same for an email without a user: the answer reveals nothing.
    for (let i = 0; i < 5; i++) await attempt(new Browser(t.app), 'ghost@acme.example', `guess ${i}`);
    expect((await attempt(new Browser(t.app), 'ghost@acme.example', 'x')).statusCode).toBe(429);

    // Slowed, not locked: after the wait (1 s after the fifth failure) the right password signs in.
    t.clock.advance(1000);
    expect((await attempt(new Browser(t.app), f.email, f.password)).statusCode).toBe(303);
  });

  it('a user of a deleted account cannot continue', async () => {
    const browser = new Browser(t.app);
    const consent = await signIn(browser, url(), f.email, f.password);
    await t.db.kysely.deleteFrom('accounts').where('id', '=', f.accountId).execute();
    const response = await browser.post('/oauth2/authorize', { ...hiddenFields(consent), decision: 'approve' });
    // No longer signed in: back to the sign-in page, and no code.
    expect(response.statusCode).toBe(303);
    expect((await browser.get(response.headers.location as string)).body).toContain('action="/oauth2/sign-in"');
    expect(await count('oauth_codes')).toBe(0);
  });
});
