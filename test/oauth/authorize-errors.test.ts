import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import {
  authorizeUrl,
  Browser,
  decide,
  type OAuthFixture,
  pkcePair,
  REDIRECT_URI,
  setupOAuth,
  signIn,
} from './helpers.js';

let t: TestApp;
let f: OAuthFixture;
// One app for the file (its tests are refusals); each test gets its own merchant, user and app.
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());
beforeEach(async () => {
  f = await setupOAuth(t, { scopes: ['customer_identity:write'] });
});

const base = () => ({ client_id: f.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state: 'st-1' });

/** Asserts the error page: no redirect, HTML, the page headers. */
function expectErrorPage(response: LightMyRequestResponse, status = 400): string {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers.location).toBeUndefined();
  expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(response.headers['x-frame-options']).toBe('DENY');
  expect(response.body).toContain('<h1>');
  return response.body;
}

/** Asserts an RFC 6749 4.1.2.1 error redirect to the registered URI; returns its query. */
function expectErrorRedirect(
  response: LightMyRequestResponse,
  error: string,
  redirectUri = REDIRECT_URI,
): URLSearchParams {
  expect([302, 303], response.body).toContain(response.statusCode);
  const location = new URL(response.headers.location as string);
  expect(`${location.origin}${location.pathname}`).toBe(redirectUri.split('?')[0]);
  expect(location.searchParams.get('error')).toBe(error);
  expect(location.searchParams.get('error_description')).toEqual(expect.any(String));
  expect(location.searchParams.get('code')).toBeNull();
  return location.searchParams;
}

const codes = async () =>
  Number(
    (
      await t.db.kysely
        .selectFrom('oauth_codes')
        .innerJoin('oauth_grants', 'oauth_grants.id', 'oauth_codes.grant_id')
        // This test's merchant only: the file's app keeps every test's rows.
        .where('oauth_grants.account_id', '=', f.accountId)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('GET /oauth2/authorize: errors shown on a page, never redirected', () => {
  it('an unknown client_id', async () => {
    const body = expectErrorPage(await t.app.inject(authorizeUrl({ ...base(), client_id: 'app_doesnotexist' })));
    expect(body).toContain('Invalid client');
  });

  it('a missing client_id', async () => {
    expectErrorPage(await t.app.inject(authorizeUrl({ ...base(), client_id: undefined })));
  });

  it('a redirect_uri that is not registered, or only resembles one (prefix, case, query, slash)', async () => {
    for (const uri of [
      'https://evil.example/callback',
      `${REDIRECT_URI}/more`,
      `${REDIRECT_URI}?next=https://evil.example`,
      REDIRECT_URI.replace('callback', 'Callback'),
      `${REDIRECT_URI}/`,
      REDIRECT_URI.slice(0, -1),
      REDIRECT_URI.replace('https:', 'http:'),
    ]) {
      const body = expectErrorPage(await t.app.inject(authorizeUrl({ ...base(), redirect_uri: uri })));
      expect(body).toContain('redirect_uri');
    }
  });

  it('a missing redirect_uri (required, even with one registered URI)', async () => {
    expectErrorPage(await t.app.inject(authorizeUrl({ ...base(), redirect_uri: undefined })));
  });

  it('a repeated parameter', async () => {
    const response = await t.app.inject(`${authorizeUrl(base())}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}`);
    expectErrorPage(response);
  });

  it('the same for a signed-in merchant posting the consent form', async () => {
    const browser = new Browser(t.app);
    const consent = await signIn(browser, authorizeUrl(base()), f.email, f.password);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(consent)?.[1] as string;
    const response = await browser.post('/oauth2/authorize', {
      ...base(),
      redirect_uri: 'https://evil.example/callback',
      csrf_token: csrf,
      decision: 'approve',
    });
    expectErrorPage(response);
    expect(await codes()).toBe(0);
  });
});

describe('GET /oauth2/authorize: other errors go back to the app with error and state', () => {
  it('scope escalation: a scope the app is not registered for is invalid_scope', async () => {
    const query = expectErrorRedirect(
      await t.app.inject(authorizeUrl({ ...base(), scope: 'customer_identity:write earning_rule:read' })),
      'invalid_scope',
    );
    expect(query.get('state')).toBe('st-1');
    expect(query.get('error_description')).toContain('earning_rule:read');
  });

  it('an unknown scope is invalid_scope', async () => {
    expectErrorRedirect(await t.app.inject(authorizeUrl({ ...base(), scope: 'admin:everything' })), 'invalid_scope');
  });

  it('a response_type other than code is unsupported_response_type', async () => {
    const query = expectErrorRedirect(
      await t.app.inject(authorizeUrl({ ...base(), response_type: 'token' })),
      'unsupported_response_type',
    );
    expect(query.get('state')).toBe('st-1');
    expectErrorRedirect(await t.app.inject(authorizeUrl({ ...base(), response_type: undefined })), 'invalid_request');
  });

  it('a missing state is invalid_request', async () => {
    const query = expectErrorRedirect(
      await t.app.inject(authorizeUrl({ ...base(), state: undefined })),
      'invalid_request',
    );
    expect(query.get('state')).toBeNull();
  });

  it('PKCE: plain is refused; a malformed challenge is refused', async () => {
    const { verifier, challenge } = pkcePair();
    expectErrorRedirect(
      await t.app.inject(authorizeUrl({ ...base(), code_challenge: verifier, code_challenge_method: 'plain' })),
      'invalid_request',
    );
    expectErrorRedirect(
      await t.app.inject(authorizeUrl({ ...base(), code_challenge: challenge, code_challenge_method: 'S512' })),
      'invalid_request',
    );
    expectErrorRedirect(
      await t.app.inject(authorizeUrl({ ...base(), code_challenge: 'too-short', code_challenge_method: 'S256' })),
      'invalid_request',
    );
  });

  it('a public app without PKCE is invalid_request', async () => {
    const pub = await setupOAuth(t, { public: true });
    const query = expectErrorRedirect(
      await t.app.inject(authorizeUrl({ ...base(), client_id: pub.clientId })),
      'invalid_request',
    );
    expect(query.get('error_description')).toContain('PKCE');
    expect(query.get('state')).toBe('st-1');
  });

  it('keeps the query string of a registered redirect URI', async () => {
    const withQuery = 'https://shop-app.example/cb?tenant=7';
    const g = await setupOAuth(t, { scopes: ['customer_identity:write'], redirectUris: [withQuery] });
    const query = expectErrorRedirect(
      await t.app.inject(authorizeUrl({ ...base(), client_id: g.clientId, redirect_uri: withQuery, scope: 'x:y' })),
      'invalid_scope',
      withQuery,
    );
    expect(query.get('tenant')).toBe('7');
    expect(query.get('state')).toBe('st-1');
  });

  it('denied consent is access_denied with the state, and issues no code', async () => {
    const browser = new Browser(t.app);
    const consent = await signIn(browser, authorizeUrl(base()), f.email, f.password);
    const response = await decide(browser, consent, 'deny');
    expect(response.statusCode).toBe(303);
    const query = expectErrorRedirect(response, 'access_denied');
    expect(query.get('state')).toBe('st-1');
    expect(await codes()).toBe(0);
  });
});
