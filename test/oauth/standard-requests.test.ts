import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../src/auth/scopes.js';
import { createTestApp, createTestDatabaseUrl, type TestApp } from '../helpers/app.js';
import { loyalty } from '../helpers/cli.js';
import {
  authorize,
  authorizeUrl,
  Browser,
  decide,
  expectOAuthError,
  type OAuthFixture,
  pkcePair,
  postForm,
  REDIRECT_URI,
  setupOAuth,
  signIn,
} from './helpers.js';

// OAuth requests as standard clients send them (RFC 6749, 7636, 8252, 8414, 9207, 9700).

let t: TestApp;
let f: OAuthFixture;
beforeEach(async () => {
  t = await createTestApp();
  f = await setupOAuth(t, { scopes: ['customer_identity:write', 'earning_rule:read'] });
});
afterEach(async () => t.close());

const base = () => ({ client_id: f.clientId, redirect_uri: REDIRECT_URI, response_type: 'code' });

/** The query of a redirect to the app. */
function redirectQuery(response: LightMyRequestResponse): URLSearchParams {
  expect([302, 303], response.body).toContain(response.statusCode);
  return new URL(response.headers.location as string).searchParams;
}

/** HTTP Basic as RFC 6749 2.3.1 says: id and secret form-encoded, then joined and base64-encoded. */
function formEncodedBasic(id: string, secret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/_/g, '%5F').replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

function postWithAuthorization(
  url: '/oauth2/token' | '/oauth2/revoke',
  authorization: string,
  form: Record<string, string>,
): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  });
}

describe('GET /.well-known/oauth-authorization-server (RFC 8414)', () => {
  it('describes the endpoints and what they support, with the issuer the request came to', async () => {
    const response = await t.app.inject({
      url: '/.well-known/oauth-authorization-server',
      headers: { host: 'h.example:8080' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      issuer: 'http://h.example:8080',
      authorization_endpoint: 'http://h.example:8080/oauth2/authorize',
      token_endpoint: 'http://h.example:8080/oauth2/token',
      revocation_endpoint: 'http://h.example:8080/oauth2/revoke',
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      scopes_supported: [...ALL_SCOPES],
      authorization_response_iss_parameter_supported: true,
      service_documentation: 'http://h.example:8080/docs',
    });
  });

  it('takes the issuer from PUBLIC_URL when it is set, whatever the Host', async () => {
    const proxied = await createTestApp({ PUBLIC_URL: 'https://loyalty.example.com' });
    try {
      const response = await proxied.app.inject({
        url: '/.well-known/oauth-authorization-server',
        headers: { host: 'evil.example' },
      });
      expect(response.json()).toMatchObject({
        issuer: 'https://loyalty.example.com',
        token_endpoint: 'https://loyalty.example.com/oauth2/token',
      });
    } finally {
      await proxied.close();
    }
  });
});

describe('the authorization response names its issuer (RFC 9207)', () => {
  it('with a code and with an error, the same issuer as the metadata', async () => {
    const { location } = await authorize(t, f);
    const metadata = (await t.app.inject({ url: '/.well-known/oauth-authorization-server' })).json();
    expect(location.searchParams.get('iss')).toBe(metadata.issuer);
    const refused = redirectQuery(await t.app.inject(authorizeUrl({ ...base(), state: 's', response_type: 'token' })));
    expect(refused.get('error')).toBe('unsupported_response_type');
    expect(refused.get('iss')).toBe(metadata.issuer);
  });
});

describe('client_secret_basic as RFC 6749 2.3.1 encodes it', () => {
  it('authenticates a form-encoded id and secret at the token and revocation endpoints', async () => {
    const { code } = await authorize(t, f, { state: 'st' });
    const basic = formEncodedBasic(f.clientId, f.clientSecret as string);
    expect(basic).not.toBe(`Basic ${Buffer.from(`${f.clientId}:${f.clientSecret}`).toString('base64')}`);
    const token = await postWithAuthorization('/oauth2/token', basic, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
    });
    expect(token.statusCode, token.body).toBe(200);
    const revoked = await postWithAuthorization('/oauth2/revoke', basic, { token: token.json().refresh_token });
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect((await t.services.auth.authenticate(token.json().access_token).catch(() => null)) ?? null).toBeNull();
  });

  it('still refuses a wrong secret, and malformed percent-encoding, with 401 and a challenge', async () => {
    const { code } = await authorize(t, f, { state: 'st' });
    for (const authorization of [
      formEncodedBasic(f.clientId, 'cs_wrong'),
      `Basic ${Buffer.from(`${f.clientId}:%zz`).toString('base64')}`,
    ]) {
      const response = await postWithAuthorization('/oauth2/token', authorization, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
      });
      expectOAuthError(response, 401, 'invalid_client');
      expect(response.headers['www-authenticate']).toBe('Basic realm="loyalty"');
    }
  });
});

describe('PKCE and state at the authorization step', () => {
  it('state may be left out when a PKCE challenge is sent (RFC 9700 2.1.1)', async () => {
    const { verifier, challenge } = pkcePair();
    const { code, location } = await authorize(t, f, {
      state: undefined,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    expect(location.searchParams.has('state')).toBe(false);
    const token = await postForm(t, '/oauth2/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: f.clientId,
      client_secret: f.clientSecret as string,
    });
    expect(token.statusCode, token.body).toBe(200);
  });

  it('state is still required without PKCE', async () => {
    const query = redirectQuery(await t.app.inject(authorizeUrl(base())));
    expect(query.get('error')).toBe('invalid_request');
    expect(query.get('error_description')).toMatch(/state/);
  });

  it('a code_challenge without its method is invalid_request, before sign-in and at consent', async () => {
    const { challenge } = pkcePair();
    const params = { ...base(), state: 'st', code_challenge: challenge };
    const query = redirectQuery(await t.app.inject(authorizeUrl(params)));
    expect(query.get('error')).toBe('invalid_request');
    expect(query.get('error_description')).toMatch(/code_challenge_method/);
    expect(query.get('state')).toBe('st');

    // A consent form forged without the method (after signing in with a proper request) is refused too.
    const browser = new Browser(t.app);
    const consent = await signIn(
      browser,
      authorizeUrl({ ...params, code_challenge_method: 'S256' }),
      f.email,
      f.password,
    );
    const forged = consent.replace(/<input type="hidden" name="code_challenge_method" value="S256">/, '');
    expect(forged).not.toBe(consent);
    const refused = redirectQuery(await decide(browser, forged, 'approve'));
    expect(refused.get('error')).toBe('invalid_request');
    expect(await t.db.kysely.selectFrom('oauth_codes').select('id').execute()).toEqual([]);
  });
});

describe('loopback redirect URIs of public apps (RFC 8252 7.3)', () => {
  it('accepts any port for a public app, and only the port may differ', async () => {
    const pub = await setupOAuth(t, {
      public: true,
      redirectUris: ['http://127.0.0.1/callback', 'http://[::1]:8000/cb'],
    });
    const { verifier, challenge } = pkcePair();
    const pkce = { code_challenge: challenge, code_challenge_method: 'S256', state: 'st' };
    for (const redirectUri of ['http://127.0.0.1:49152/callback', 'http://127.0.0.1/callback', 'http://[::1]:1/cb']) {
      const page = await t.app.inject(
        authorizeUrl({ client_id: pub.clientId, redirect_uri: redirectUri, response_type: 'code', ...pkce }),
      );
      expect(page.statusCode, `${redirectUri}: ${page.body.slice(0, 300)}`).toBe(200);
    }
    for (const redirectUri of [
      'http://127.0.0.1:49152/other',
      'http://127.0.0.1:49152/callback?x=1',
      'http://localhost:49152/callback',
      'https://127.0.0.1:49152/callback',
      'http://127.0.0.2:49152/callback',
    ]) {
      const page = await t.app.inject(
        authorizeUrl({ client_id: pub.clientId, redirect_uri: redirectUri, response_type: 'code', ...pkce }),
      );
      expect(page.statusCode, redirectUri).toBe(400);
      expect(page.headers.location, redirectUri).toBeUndefined();
    }

    // The whole flow on a port chosen at run time: the code is bound to that exact URI.
    const runtimeUri = 'http://127.0.0.1:51234/callback';
    const browser = new Browser(t.app);
    const consent = await signIn(
      browser,
      authorizeUrl({ client_id: pub.clientId, redirect_uri: runtimeUri, response_type: 'code', ...pkce }),
      pub.email,
      pub.password,
    );
    const approved = await decide(browser, consent, 'approve');
    const location = new URL(approved.headers.location as string);
    expect(location.origin).toBe('http://127.0.0.1:51234');
    const exchange = (redirectUri: string) =>
      postForm(t, '/oauth2/token', {
        grant_type: 'authorization_code',
        code: location.searchParams.get('code') as string,
        redirect_uri: redirectUri,
        code_verifier: verifier,
        client_id: pub.clientId,
      });
    expectOAuthError(await exchange('http://127.0.0.1:51235/callback'), 400, 'invalid_grant');
  });

  it('keeps exact matching for confidential apps', async () => {
    const conf = await setupOAuth(t, { redirectUris: ['http://127.0.0.1/callback'] });
    const page = await t.app.inject(
      authorizeUrl({
        client_id: conf.clientId,
        redirect_uri: 'http://127.0.0.1:5000/callback',
        response_type: 'code',
        state: 's',
      }),
    );
    expect(page.statusCode).toBe(400);
  });
});

describe('messages that name the problem', () => {
  it('an unknown client_id says so, on the page and at the token endpoint', async () => {
    const page = await t.app.inject(authorizeUrl({ ...base(), client_id: 'app_doesnotexist', state: 's' }));
    expect(page.statusCode).toBe(400);
    expect(page.body).toContain('no app has this &#96;client_id&#96;');
    const token = await postForm(t, '/oauth2/token', {
      grant_type: 'refresh_token',
      refresh_token: 'ort_x',
      client_id: 'app_doesnotexist',
      client_secret: 'cs_x',
    });
    expect(expectOAuthError(token, 400, 'invalid_client')).toMatch(/no app has this `client_id`/);
  });

  it('a repeated form parameter is named as repeated, at the token endpoint and on the pages', async () => {
    const token = await t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=refresh_token&grant_type=authorization_code&client_id=x',
    });
    expect(expectOAuthError(token, 400, 'invalid_request')).toBe(
      'Invalid request: parameter `grant_type` is repeated (each parameter may be sent once)',
    );
    const page = await t.app.inject(`${authorizeUrl({ ...base(), state: 's' })}&state=again`);
    expect(page.statusCode).toBe(400);
    expect(page.body).toContain('parameter &#96;state&#96; is repeated');
  });

  it('grants this server does not offer are unsupported_grant_type, whatever the client', async () => {
    for (const grantType of ['password', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code']) {
      const response = await postForm(t, '/oauth2/token', { grant_type: grantType, client_id: f.clientId });
      expect(expectOAuthError(response, 400, 'unsupported_grant_type')).toMatch(/authorization_code or refresh_token/);
    }
  });

  it('no error_description holds a character RFC 6749 forbids (" or \\ or non-ASCII)', async () => {
    const { verifier } = pkcePair();
    const fromPage = redirectQuery(
      await t.app.inject(
        authorizeUrl({ ...base(), state: 's', code_challenge: verifier, code_challenge_method: 'plain' }),
      ),
    );
    const pageDescription = fromPage.get('error_description') as string;
    expect(pageDescription).toMatch(/plain/);
    const fromToken = expectOAuthError(
      await postForm(t, '/oauth2/token', { grant_type: 'authorization_code', code: 'oac_"\\é', client_id: f.clientId }),
      400,
      expect.any(String) as unknown as string,
    );
    for (const description of [pageDescription, fromToken]) {
      expect(description).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]+$/);
    }
  });
});

describe('the token endpoint has a rate limit', () => {
  it('answers 429 with Retry-After past RATE_LIMIT_PER_SECOND per client and address', async () => {
    const limited = await createTestApp({ RATE_LIMIT_PER_SECOND: '3' });
    try {
      const statuses: number[] = [];
      let last: LightMyRequestResponse | undefined;
      for (let i = 0; i < 6; i++) {
        last = await limited.app.inject({
          method: 'POST',
          url: '/oauth2/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: 'grant_type=refresh_token&refresh_token=ort_x&client_id=app_x&client_secret=cs_x',
        });
        statuses.push(last.statusCode);
      }
      expect(statuses).toEqual([400, 400, 400, 429, 429, 429]);
      expect(Number(last?.headers['retry-after'])).toBeGreaterThan(0);
      expect(last?.json()).toEqual({ error: 'rate_limited', error_description: expect.stringMatching(/rate limit/) });
      // Another client from the same address has its own budget.
      const other = await limited.app.inject({
        method: 'POST',
        url: '/oauth2/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=refresh_token&refresh_token=ort_x&client_id=app_y&client_secret=cs_x',
      });
      expect(other.statusCode).toBe(400);
    } finally {
      await limited.close();
    }
  });
});

describe('loyalty apps create --public', () => {
  it('does not tell the user to store a secret that does not exist', async () => {
    const { url, drop } = await createTestDatabaseUrl();
    try {
      const result = await loyalty(['apps', 'create', '--name', 'Native', '--public'], { DATABASE_URL: url });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).not.toMatch(/Store the client secret/);
      expect(result.stdout).toMatch(/public client/);
      expect(result.stdout).toMatch(/PKCE/);
    } finally {
      await drop();
    }
  });
});
