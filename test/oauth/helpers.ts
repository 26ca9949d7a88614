import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Scope } from '../../src/auth/scopes.js';
import type { TestApp } from '../helpers/app.js';

export const REDIRECT_URI = 'https://shop-app.example/oauth/callback';
export const PASSWORD = 'correct horse battery';

/** A merchant with a user, and an app registered for the flow. */
export interface OAuthFixture {
  accountId: number;
  email: string;
  password: string;
  clientId: string;
  /** Null for a public app. */
  clientSecret: string | null;
}

/** Creates an account with a merchant user, and an app (confidential unless `public`). */
export async function setupOAuth(
  t: TestApp,
  options: { public?: boolean; scopes?: Scope[]; redirectUris?: string[]; appName?: string; email?: string } = {},
): Promise<OAuthFixture> {
  const account = await t.services.accounts.create('Acme Store');
  const email = options.email ?? `owner-${randomBytes(4).toString('hex')}@acme.example`;
  await t.services.users.create(account.id, { email, password: PASSWORD });
  const app = await t.services.apps.create({
    name: options.appName ?? 'Reviews App',
    scopes: options.scopes,
    redirectUris: options.redirectUris ?? [REDIRECT_URI],
    public: options.public ?? false,
  });
  return { accountId: account.id, email, password: PASSWORD, clientId: app.client_id, clientSecret: app.client_secret };
}

/** A PKCE verifier and its S256 challenge (RFC 7636 4.1, 4.2). */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The authorization endpoint URL with these parameters. */
export function authorizeUrl(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, value);
  return `/oauth2/authorize?${query.toString()}`;
}

/** The value of a hidden field of the page (the CSRF token, or a carried parameter). */
export function hiddenField(page: string, name: string): string | undefined {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)">`).exec(page);
  return match?.[1]
    ?.replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#96;/g, '`');
}

/** Every hidden field of the first form of the page. */
export function hiddenFields(page: string): Record<string, string> {
  const form = page.slice(page.indexOf('<form'), page.indexOf('</form>'));
  const fields: Record<string, string> = {};
  for (const match of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1] as string] = hiddenField(form, match[1] as string) as string;
  }
  return fields;
}

/**
 * A browser, by hand: keeps the cookies the server sets (honouring their path) and sends forms
 * as application/x-www-form-urlencoded.
 */
export class Browser {
  readonly cookies = new Map<string, { value: string; path: string }>();

  constructor(private readonly app: FastifyInstance) {}

  async get(url: string): Promise<LightMyRequestResponse> {
    return this.keep(await this.app.inject({ method: 'GET', url, headers: this.cookieHeader(url) }));
  }

  async post(url: string, form: Record<string, string | undefined>): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams();
    for (const [name, value] of Object.entries(form)) if (value !== undefined) body.set(name, value);
    return this.keep(
      await this.app.inject({
        method: 'POST',
        url,
        headers: { ...this.cookieHeader(url), 'content-type': 'application/x-www-form-urlencoded' },
        payload: body.toString(),
      }),
    );
  }

  private cookieHeader(url: string): Record<string, string> {
    const path = url.split('?')[0] ?? '/';
    const pairs = [...this.cookies].filter(([, c]) => path.startsWith(c.path)).map(([name, c]) => `${name}=${c.value}`);
    return pairs.length > 0 ? { cookie: pairs.join('; ') } : {};
  }

  private keep(response: LightMyRequestResponse): LightMyRequestResponse {
    for (const cookie of response.cookies as Array<{ name: string; value: string; path?: string; maxAge?: number }>) {
      if (cookie.maxAge === 0) this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, { value: cookie.value, path: cookie.path ?? '/' });
    }
    return response;
  }
}

/** Opens the authorize URL, signs in and returns the consent page (asserting each step). */
export async function signIn(browser: Browser, url: string, email: string, password: string): Promise<string> {
  const signInPage = await browser.get(url);
  expect(signInPage.statusCode, signInPage.body).toBe(200);
  expect(signInPage.body).toContain('action="/oauth2/sign-in"');
  const signedIn = await browser.post('/oauth2/sign-in', { ...hiddenFields(signInPage.body), email, password });
  expect(signedIn.statusCode, signedIn.body).toBe(303);
  const consent = await browser.get(signedIn.headers.location as string);
  expect(consent.statusCode, consent.body).toBe(200);
  expect(consent.body).toContain('value="approve"');
  return consent.body;
}

/** Submits the consent page's decision; returns the redirect response. */
export function decide(
  browser: Browser,
  consentPage: string,
  decision: 'approve' | 'deny',
): Promise<LightMyRequestResponse> {
  return browser.post('/oauth2/authorize', { ...hiddenFields(consentPage), decision });
}

/** The whole browser part: sign in, approve, and the code from the redirect. */
export async function authorize(
  t: TestApp,
  fixture: OAuthFixture,
  params: Record<string, string | undefined> = {},
): Promise<{ code: string; location: URL }> {
  const browser = new Browser(t.app);
  const url = authorizeUrl({
    client_id: fixture.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    state: 'xyz-state',
    ...params,
  });
  const consent = await signIn(browser, url, fixture.email, fixture.password);
  const approved = await decide(browser, consent, 'approve');
  expect(approved.statusCode, approved.body).toBe(303);
  const location = new URL(approved.headers.location as string);
  const code = location.searchParams.get('code');
  expect(code).toMatch(/^oac_[0-9A-Za-z]{40}$/);
  return { code: code as string, location };
}

/** POSTs a form to the token (or revocation) endpoint, with optional HTTP Basic credentials. */
export function postForm(
  t: TestApp,
  url: '/oauth2/token' | '/oauth2/revoke',
  form: Record<string, string | undefined>,
  basic?: { id: string; secret: string },
): Promise<LightMyRequestResponse> {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(form)) if (value !== undefined) body.set(name, value);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (basic) headers.authorization = `Basic ${Buffer.from(`${basic.id}:${basic.secret}`).toString('base64')}`;
  return t.app.inject({ method: 'POST', url, headers, payload: body.toString() });
}

/** Exchanges a code as a confidential client (secret in the body). */
export function exchange(
  t: TestApp,
  fixture: OAuthFixture,
  code: string,
  extra: Record<string, string | undefined> = {},
): Promise<LightMyRequestResponse> {
  return postForm(t, '/oauth2/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    client_id: fixture.clientId,
    client_secret: fixture.clientSecret ?? undefined,
    ...extra,
  });
}

/** Asserts an RFC 6749 5.2 error of the token endpoint. */
export function expectOAuthError(response: LightMyRequestResponse, status: number, error: string): string {
  expect({ status: response.statusCode, body: response.json() }).toMatchObject({ status, body: { error } });
  expect(Object.keys(response.json()).sort()).toEqual(['error', 'error_description']);
  expect(response.headers['cache-control']).toBe('no-store');
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  return response.json().error_description;
}

/** One create_or_update call with a bearer token. */
export function createOrUpdate(t: TestApp, token: string, distinctId = 'crm-1'): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url: '/v1/customer_identities/create_or_update',
    headers: { authorization: `Bearer ${token}` },
    payload: { customer_identity: { distinct_id: distinctId, email: `${distinctId}@buyer.example` } },
  });
}
