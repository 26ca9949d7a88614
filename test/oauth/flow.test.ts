import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../src/auth/scopes.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import {
  authorize,
  authorizeUrl,
  Browser,
  createOrUpdate,
  exchange,
  expectOAuthError,
  type OAuthFixture,
  pkcePair,
  postForm,
  REDIRECT_URI,
  setupOAuth,
  signIn,
} from './helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await createTestApp();
});
afterEach(async () => t.close());

interface TokenBody {
  access_token: string;
  token_type: string;
  expires_in: number;
  refresh_token: string;
  scope: string;
}

const refresh = (f: OAuthFixture, refreshToken: string, extra: Record<string, string> = {}) =>
  postForm(t, '/oauth2/token', {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: f.clientId,
    client_secret: f.clientSecret ?? undefined,
    ...extra,
  });

const revoke = (f: OAuthFixture, token: string) =>
  postForm(t, '/oauth2/revoke', { token, client_id: f.clientId, client_secret: f.clientSecret ?? undefined });

async function tokensFor(f: OAuthFixture, params: Record<string, string> = {}): Promise<TokenBody> {
  const { code } = await authorize(t, f, params);
  const response = await exchange(t, f, code);
  expect(response.statusCode, response.body).toBe(200);
  return response.json<TokenBody>();
}

describe('the authorization code flow: confidential app', () => {
  let f: OAuthFixture;
  beforeEach(async () => {
    f = await setupOAuth(t);
  });

  it('sign in, approve, exchange with the secret, call the API, refresh, revoke', async () => {
    const { code, location } = await authorize(t, f, { scope: 'customer_identity:write' });
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get('state')).toBe('xyz-state');

    const exchanged = await exchange(t, f, code);
    expect(exchanged.statusCode, exchanged.body).toBe(200);
    expect(exchanged.headers['cache-control']).toBe('no-store');
    expect(exchanged.headers.pragma).toBe('no-cache');
    const tokens = exchanged.json<TokenBody>();
    expect(tokens).toEqual({
      access_token: expect.stringMatching(/^oa2_[0-9A-Za-z]{40}$/),
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^ort_[0-9A-Za-z]{40}$/),
      scope: 'customer_identity:write',
    });

    // An ordinary app token: the merchant's account, the app, the approved scopes.
    const created = await createOrUpdate(t, tokens.access_token);
    expect(created.statusCode, created.body).toBe(201);
    const app = await t.services.apps.requireByClientId(f.clientId);
    expect(await t.services.auth.authenticate(tokens.access_token)).toMatchObject({
      kind: 'access_token',
      accountId: f.accountId,
      appId: app.id,
      scopes: ['customer_identity:write'],
    });

    // Refresh: a new pair; the old access token and the old refresh token stop working.
    const refreshed = await refresh(f, tokens.refresh_token);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const next = refreshed.json<TokenBody>();
    expect(next.access_token).not.toBe(tokens.access_token);
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect(next.scope).toBe('customer_identity:write');
    expect((await createOrUpdate(t, tokens.access_token, 'crm-2')).statusCode).toBe(401);
    expect((await createOrUpdate(t, next.access_token, 'crm-2')).statusCode).toBe(201);

    // Revoke the new access token: refused by the API at once.
    const revoked = await postForm(
      t,
      '/oauth2/revoke',
      { token: next.access_token },
      { id: f.clientId, secret: f.clientSecret as string },
    );
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(revoked.body).toBe('');
    expect((await createOrUpdate(t, next.access_token, 'crm-3')).statusCode).toBe(401);
  });

  it('accepts the client credentials in HTTP Basic, and PKCE from a confidential app', async () => {
    const { verifier, challenge } = pkcePair();
    const { code } = await authorize(t, f, { code_challenge: challenge, code_challenge_method: 'S256' });
    const response = await postForm(
      t,
      '/oauth2/token',
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
      { id: f.clientId, secret: f.clientSecret as string },
    );
    expect(response.statusCode, response.body).toBe(200);
    expect((await createOrUpdate(t, response.json<TokenBody>().access_token)).statusCode).toBe(201);
  });

  it('an omitted scope grants every scope the app is registered for, listed in plain words', async () => {
    const narrow = await setupOAuth(t, { scopes: ['customer_identity:write', 'earning_rule:read'] });
    const browser = new Browser(t.app);
    const consent = await signIn(
      browser,
      authorizeUrl({ client_id: narrow.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state: 's' }),
      narrow.email,
      narrow.password,
    );
    expect(consent).toContain('Read your earning rules');
    expect(consent).toContain('Create and update customer identities (links to your customers)');
    expect(consent).not.toContain('Read your referral program settings');
    const tokens = await tokensFor(narrow);
    expect(tokens.scope).toBe('earning_rule:read customer_identity:write');
  });

  it('a refresh may narrow the scope; the new refresh token keeps the original scope', async () => {
    const tokens = await tokensFor(f);
    expect(tokens.scope).toBe(ALL_SCOPES.join(' '));
    const narrowed = await refresh(f, tokens.refresh_token, { scope: 'earning_rule:read' });
    expect(narrowed.statusCode, narrowed.body).toBe(200);
    expect(narrowed.json<TokenBody>().scope).toBe('earning_rule:read');
    expect((await createOrUpdate(t, narrowed.json<TokenBody>().access_token)).statusCode).toBe(403);
    const widened = await refresh(f, narrowed.json<TokenBody>().refresh_token);
    expect(widened.json<TokenBody>().scope).toBe(ALL_SCOPES.join(' '));
  });

  it('reusing a rotated refresh token is refused and revokes the whole chain', async () => {
    const first = await tokensFor(f);
    const second = (await refresh(f, first.refresh_token)).json<TokenBody>();
    // Used first, so this process holds it when the replay revokes it.
    expect((await createOrUpdate(t, second.access_token)).statusCode).toBe(201);
    expectOAuthError(await refresh(f, first.refresh_token), 400, 'invalid_grant');
    // The thief's replay also cost the legitimate holder its tokens: the chain is gone.
    expect((await createOrUpdate(t, second.access_token)).statusCode).toBe(401);
    expectOAuthError(await refresh(f, second.refresh_token), 400, 'invalid_grant');
  });

  it('two refreshes with one token at once: one wins, the other counts as reuse', async () => {
    const first = await tokensFor(f);
    const answers = await Promise.all([refresh(f, first.refresh_token), refresh(f, first.refresh_token)]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 400]);
    const winner = answers.find((a) => a.statusCode === 200)?.json<TokenBody>() as TokenBody;
    expect((await createOrUpdate(t, winner.access_token)).statusCode).toBe(401);
  });

  it('revoking a refresh token revokes the access tokens of its grant', async () => {
    const tokens = await tokensFor(f);
    const other = await tokensFor(f); // another grant of the same app and merchant stays
    expect((await createOrUpdate(t, tokens.access_token)).statusCode).toBe(201);
    expect((await revoke(f, tokens.refresh_token)).statusCode).toBe(200);
    expect((await createOrUpdate(t, tokens.access_token, 'crm-2')).statusCode).toBe(401);
    expectOAuthError(await refresh(f, tokens.refresh_token), 400, 'invalid_grant');
    expect((await createOrUpdate(t, other.access_token, 'crm-2')).statusCode).toBe(201);
  });

  it('revocation answers 200 for unknown tokens, and leaves another app’s tokens alone', async () => {
    const tokens = await tokensFor(f);
    const stranger = await setupOAuth(t, { appName: 'Other App' });
    expect((await revoke(f, 'oa2_unknownunknownunknownunknownunknown1234')).statusCode).toBe(200);
    expect((await revoke(f, 'not a token at all')).statusCode).toBe(200);
    expect((await revoke(stranger, tokens.access_token)).statusCode).toBe(200);
    expect((await revoke(stranger, tokens.refresh_token)).statusCode).toBe(200);
    expect((await createOrUpdate(t, tokens.access_token)).statusCode).toBe(201);
    expect((await refresh(f, tokens.refresh_token)).statusCode).toBe(200);
  });

  it('access tokens expire after ACCESS_TOKEN_TTL_SECONDS, refresh tokens after 30 days', async () => {
    const tokens = await tokensFor(f);
    t.clock.advance(3600 * 1000);
    expect((await createOrUpdate(t, tokens.access_token)).statusCode).toBe(401);
    const refreshed = await refresh(f, tokens.refresh_token);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    t.clock.advance(30 * 24 * 3600 * 1000 + 1000);
    const late = expectOAuthError(await refresh(f, refreshed.json<TokenBody>().refresh_token), 400, 'invalid_grant');
    expect(late).toMatch(/expired/);
  });
});

describe('the authorization code flow: public app with PKCE', () => {
  it('exchanges with client_id and code_verifier, refreshes with client_id alone, revokes', async () => {
    const f = await setupOAuth(t, { public: true });
    expect(f.clientSecret).toBeNull();
    const { verifier, challenge } = pkcePair();
    const { code } = await authorize(t, f, { code_challenge: challenge, code_challenge_method: 'S256' });
    const exchanged = await postForm(t, '/oauth2/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: f.clientId,
      code_verifier: verifier,
    });
    expect(exchanged.statusCode, exchanged.body).toBe(200);
    const tokens = exchanged.json<TokenBody>();
    expect((await createOrUpdate(t, tokens.access_token)).statusCode).toBe(201);

    const refreshed = await refresh(f, tokens.refresh_token);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const next = refreshed.json<TokenBody>();
    expect((await createOrUpdate(t, tokens.access_token, 'crm-2')).statusCode).toBe(401);
    expectOAuthError(await refresh(f, tokens.refresh_token), 400, 'invalid_grant');

    expect((await revoke(f, next.refresh_token)).statusCode).toBe(200);
    expect((await createOrUpdate(t, next.access_token, 'crm-3')).statusCode).toBe(401);
  });

  it('a public app may not present a client secret', async () => {
    const f = await setupOAuth(t, { public: true });
    const { verifier, challenge } = pkcePair();
    const { code } = await authorize(t, f, { code_challenge: challenge, code_challenge_method: 'S256' });
    const response = await exchange(t, f, code, { code_verifier: verifier, client_secret: 'cs_guessed' });
    expectOAuthError(response, 400, 'invalid_client');
  });
});
