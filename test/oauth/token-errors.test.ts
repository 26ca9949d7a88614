import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import {
  authorize,
  createOrUpdate,
  exchange,
  expectOAuthError,
  type OAuthFixture,
  pkcePair,
  postForm,
  REDIRECT_URI,
  setupOAuth,
} from './helpers.js';

let t: TestApp;
let f: OAuthFixture;
beforeEach(async () => {
  t = await createTestApp();
  f = await setupOAuth(t);
});
afterEach(async () => t.close());

describe('POST /oauth2/token: authorization codes', () => {
  it('a reused code is refused, and the tokens issued from it are revoked (RFC 6749 10.5)', async () => {
    const { code } = await authorize(t, f);
    const first = await exchange(t, f, code);
    expect(first.statusCode).toBe(200);
    const { access_token, refresh_token } = first.json();
    expectOAuthError(await exchange(t, f, code), 400, 'invalid_grant');
    expect((await createOrUpdate(t, access_token)).statusCode).toBe(401);
    const refreshed = await postForm(t, '/oauth2/token', {
      grant_type: 'refresh_token',
      refresh_token,
      client_id: f.clientId,
      client_secret: f.clientSecret as string,
    });
    expectOAuthError(refreshed, 400, 'invalid_grant');
  });

  it('an expired code (older than 60 s) is refused', async () => {
    const { code } = await authorize(t, f);
    t.clock.advance(61_000);
    expect(expectOAuthError(await exchange(t, f, code), 400, 'invalid_grant')).toMatch(/expired/);
  });

  it('a code is good until its 60 seconds are up', async () => {
    const { code } = await authorize(t, f);
    t.clock.advance(55_000);
    expect((await exchange(t, f, code)).statusCode).toBe(200);
  });

  it('an unknown or malformed code is invalid_grant', async () => {
    expectOAuthError(await exchange(t, f, 'oac_0000000000000000000000000000000000000000'), 400, 'invalid_grant');
    expectOAuthError(await exchange(t, f, 'nonsense'), 400, 'invalid_grant');
    expectOAuthError(await exchange(t, f, ''), 400, 'invalid_request');
  });

  it('a code issued to another app is invalid_grant', async () => {
    const other = await setupOAuth(t, { appName: 'Other' });
    const { code } = await authorize(t, f);
    expectOAuthError(await exchange(t, other, code), 400, 'invalid_grant');
  });

  it('the redirect_uri must be the one of the authorization request: invalid_grant when it differs', async () => {
    const { code } = await authorize(t, f);
    const description = expectOAuthError(
      await exchange(t, f, code, { redirect_uri: 'https://shop-app.example/other' }),
      400,
      'invalid_grant',
    );
    expect(description).toMatch(/redirect_uri/);
  });

  it('a missing redirect_uri is invalid_request naming it', async () => {
    const { code } = await authorize(t, f);
    const description = expectOAuthError(
      await exchange(t, f, code, { redirect_uri: undefined }),
      400,
      'invalid_request',
    );
    expect(description).toMatch(/Missing parameter: `redirect_uri`/);
  });

  it('a wrong PKCE verifier is invalid_grant and uses up the code', async () => {
    const { verifier, challenge } = pkcePair();
    const { code } = await authorize(t, f, { code_challenge: challenge, code_challenge_method: 'S256' });
    const wrong = pkcePair().verifier;
    expectOAuthError(await exchange(t, f, code, { code_verifier: wrong }), 400, 'invalid_grant');
    expectOAuthError(await exchange(t, f, code, { code_verifier: verifier }), 400, 'invalid_grant');
  });

  it('a missing PKCE verifier is invalid_grant, for a confidential app and for a public one', async () => {
    const { challenge } = pkcePair();
    const { code } = await authorize(t, f, { code_challenge: challenge, code_challenge_method: 'S256' });
    expect(expectOAuthError(await exchange(t, f, code), 400, 'invalid_grant')).toContain('code_verifier');

    const pub = await setupOAuth(t, { public: true });
    const pair = pkcePair();
    const issued = await authorize(t, pub, { code_challenge: pair.challenge, code_challenge_method: 'S256' });
    expect(expectOAuthError(await exchange(t, pub, issued.code), 400, 'invalid_grant')).toContain('code_verifier');
    // Without a challenge the public app never gets a code at all (see authorize-errors).
  });

  it('a verifier sent for a code without a challenge is invalid_grant', async () => {
    const { code } = await authorize(t, f);
    expectOAuthError(await exchange(t, f, code, { code_verifier: pkcePair().verifier }), 400, 'invalid_grant');
  });
});

describe('POST /oauth2/token: client authentication', () => {
  it('a wrong client secret in the body is 400 invalid_client', async () => {
    const { code } = await authorize(t, f);
    expectOAuthError(await exchange(t, f, code, { client_secret: 'cs_wrongwrongwrong' }), 400, 'invalid_client');
    // The failed attempt did not use the code up.
    expect((await exchange(t, f, code)).statusCode).toBe(200);
  });

  it('a wrong client secret in HTTP Basic is 401 invalid_client with a Basic challenge', async () => {
    const { code } = await authorize(t, f);
    const response = await postForm(
      t,
      '/oauth2/token',
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
      { id: f.clientId, secret: 'cs_wrong' },
    );
    expectOAuthError(response, 401, 'invalid_client');
    expect(response.headers['www-authenticate']).toBe('Basic realm="loyalty"');
  });

  it('a confidential app must authenticate even with PKCE, and on refresh', async () => {
    const { verifier, challenge } = pkcePair();
    const { code } = await authorize(t, f, { code_challenge: challenge, code_challenge_method: 'S256' });
    expectOAuthError(
      await exchange(t, f, code, { client_secret: undefined, code_verifier: verifier }),
      400,
      'invalid_client',
    );
    const ok = await exchange(t, f, code, { code_verifier: verifier });
    expect(ok.statusCode).toBe(200);
    const refreshed = await postForm(t, '/oauth2/token', {
      grant_type: 'refresh_token',
      refresh_token: ok.json().refresh_token,
      client_id: f.clientId,
    });
    expectOAuthError(refreshed, 400, 'invalid_client');
  });

  it('an unknown client and missing credentials are invalid_client', async () => {
    const { code } = await authorize(t, f);
    expectOAuthError(await exchange(t, f, code, { client_id: 'app_nobody' }), 400, 'invalid_client');
    expectOAuthError(
      await postForm(t, '/oauth2/token', { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
      400,
      'invalid_client',
    );
  });
});

describe('POST /oauth2/token: requests', () => {
  it('grant types other than authorization_code and refresh_token are refused', async () => {
    expectOAuthError(
      await postForm(t, '/oauth2/token', {
        grant_type: 'client_credentials',
        client_id: f.clientId,
        client_secret: f.clientSecret as string,
      }),
      400,
      'unsupported_grant_type',
    );
    expectOAuthError(
      await postForm(t, '/oauth2/token', {
        grant_type: 'magic',
        client_id: f.clientId,
        client_secret: f.clientSecret as string,
      }),
      400,
      'unsupported_grant_type',
    );
    expectOAuthError(
      await postForm(t, '/oauth2/token', { client_id: f.clientId, client_secret: f.clientSecret as string }),
      400,
      'invalid_request',
    );
  });

  it('scope escalation on refresh is invalid_scope, and the refresh token still works after', async () => {
    const narrow = await setupOAuth(t, { scopes: ['customer_identity:write', 'earning_rule:read'] });
    const { code } = await authorize(t, narrow, { scope: 'customer_identity:write' });
    const tokens = (await exchange(t, narrow, code)).json();
    const refresh = (scope?: string) =>
      postForm(t, '/oauth2/token', {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: narrow.clientId,
        client_secret: narrow.clientSecret as string,
        scope,
      });
    expectOAuthError(await refresh('customer_identity:write earning_rule:read'), 400, 'invalid_scope');
    expectOAuthError(await refresh('referral_settings:read'), 400, 'invalid_scope');
    expect((await refresh()).statusCode).toBe(200);
  });

  it('only form bodies: JSON, text and no body are invalid_request (RFC 6749 JSON errors)', async () => {
    const json = await t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      payload: { grant_type: 'authorization_code', client_id: f.clientId, client_secret: f.clientSecret },
    });
    expectOAuthError(json, 400, 'invalid_request');
    const text = await t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      headers: { 'content-type': 'text/plain' },
      payload: 'grant_type=authorization_code',
    });
    expect(expectOAuthError(text, 400, 'invalid_request')).toContain('x-www-form-urlencoded');
    expectOAuthError(await t.app.inject({ method: 'POST', url: '/oauth2/token' }), 400, 'invalid_request');
    const broken = await t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      headers: { 'content-type': 'application/json' },
      payload: '{"grant_type":',
    });
    expectOAuthError(broken, 400, 'invalid_request');
  });

  it('repeated parameters are invalid_request', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `grant_type=authorization_code&grant_type=refresh_token&client_id=${f.clientId}`,
    });
    expectOAuthError(response, 400, 'invalid_request');
  });

  it('the /v1 API still refuses form bodies with 415', async () => {
    const { code } = await authorize(t, f);
    const token = (await exchange(t, f, code)).json().access_token;
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/customer_identities/create_or_update',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'customer_identity=x',
    });
    expect(response.statusCode).toBe(415);
    expect(response.json().error.code).toBe('unsupported_media_type');
  });
});

describe('POST /oauth2/revoke: errors', () => {
  it('needs client authentication and a token', async () => {
    expectOAuthError(await postForm(t, '/oauth2/revoke', { token: 'oa2_x' }), 400, 'invalid_client');
    const basic = await postForm(t, '/oauth2/revoke', { token: 'oa2_x' }, { id: f.clientId, secret: 'cs_wrong' });
    expectOAuthError(basic, 401, 'invalid_client');
    expect(basic.headers['www-authenticate']).toBe('Basic realm="loyalty"');
    expectOAuthError(
      await postForm(t, '/oauth2/revoke', { client_id: f.clientId, client_secret: f.clientSecret as string }),
      400,
      'invalid_request',
    );
    const json = await t.app.inject({ method: 'POST', url: '/oauth2/revoke', payload: { token: 'x' } });
    expectOAuthError(json, 400, 'invalid_request');
  });
});
