import { connect } from 'node:net';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { withServices } from '../helpers/seed.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';
import { sleep } from '../helpers/wait.js';
import { hiddenFields } from './helpers.js';

// Standard OAuth client libraries from the npm registry, with their defaults, against a real
// server process: they find every endpoint through RFC 8414 discovery. And the hardening of the
// sign-in page, the authorization endpoint and the connection handling, tried the same way.

const EMAIL = 'owner@standard-shop.example';
const PASSWORD = 'a standard long password';
const CONFIDENTIAL_REDIRECT = 'https://shop-app.example/oauth/callback';
const SCOPE = 'earning_rule:read customer_identity:write';

let database: TestDatabaseUrl;
let server: ServerProcess;
let base: URL;
let seeded: { confidentialId: string; secret: string; publicId: string; apiKey: string };

beforeAll(async () => {
  database = await createTestDatabaseUrl();
  seeded = await withServices(database.url, async (services) => {
    const account = await services.accounts.create('Standard Shop');
    await services.users.create(account.id, { email: EMAIL, password: PASSWORD });
    const confidential = await services.apps.create({ name: 'Server App', redirectUris: [CONFIDENTIAL_REDIRECT] });
    const native = await services.apps.create({
      name: 'Native App',
      redirectUris: ['http://127.0.0.1/callback'],
      public: true,
    });
    const key = await services.auth.createApiKey(account.id);
    return {
      confidentialId: confidential.client_id,
      secret: confidential.client_secret as string,
      publicId: native.client_id,
      apiKey: key.key,
    };
  });
  server = await startServer({ DATABASE_URL: database.url, LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: '50' });
  base = new URL(server.url);
}, 60_000);

afterAll(async () => {
  await server?.stop('SIGKILL');
  await database?.drop();
});

/** A browser by hand: one cookie jar, forms, redirects not followed. */
class PageAgent {
  private cookie = '';

  async get(url: URL | string): Promise<Response> {
    return this.keep(await fetch(new URL(url, base), { redirect: 'manual', headers: this.headers() }));
  }

  async post(path: string, form: Record<string, string>): Promise<Response> {
    return this.keep(
      await fetch(new URL(path, base), {
        method: 'POST',
        redirect: 'manual',
        headers: { ...this.headers(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      }),
    );
  }

  private headers(): Record<string, string> {
    return this.cookie ? { cookie: this.cookie } : {};
  }

  private keep(response: Response): Response {
    for (const set of response.headers.getSetCookie()) this.cookie = set.split(';')[0] as string;
    return response;
  }
}

/** The merchant's part: the sign-in page, the consent page, approve; returns where the app is sent. */
async function approve(authorizationUrl: URL): Promise<URL> {
  const agent = new PageAgent();
  const signInPage = await agent.get(authorizationUrl);
  expect(signInPage.status).toBe(200);
  const signedIn = await agent.post('/oauth2/sign-in', {
    ...hiddenFields(await signInPage.text()),
    email: EMAIL,
    password: PASSWORD,
  });
  expect(signedIn.status).toBe(303);
  const consent = await agent.get(signedIn.headers.get('location') as string);
  expect(consent.status).toBe(200);
  const decided = await agent.post('/oauth2/authorize', { ...hiddenFields(await consent.text()), decision: 'approve' });
  expect(decided.status).toBe(303);
  return new URL(decided.headers.get('location') as string);
}

async function status(token: string): Promise<number> {
  const response = await fetch(new URL('/v1/earning_rules', base), { headers: { authorization: `Bearer ${token}` } });
  await response.arrayBuffer();
  return response.status;
}

/** Polls until the token is refused (revocation reaches every cache within a second). */
async function refusedWithin(token: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if ((await status(token)) === 401) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

describe(`standard OAuth clients against a server process (${testEngine})`, () => {
  it('openid-client 6: discovery, code + PKCE without state, refresh and revocation, its default client authentication', async () => {
    // Its defaults; http on loopback needs the library's own switch.
    const options = { execute: [client.allowInsecureRequests], algorithm: 'oauth2' as const };
    const config = await client.discovery(base, seeded.confidentialId, seeded.secret, undefined, options);
    expect(config.serverMetadata().token_endpoint).toBe(`${server.url}/oauth2/token`);

    const verifier = client.randomPKCECodeVerifier();
    const authorizationUrl = client.buildAuthorizationUrl(config, {
      redirect_uri: CONFIDENTIAL_REDIRECT,
      scope: SCOPE,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const callback = await approve(authorizationUrl);
    expect(callback.searchParams.get('iss')).toBe(server.url);

    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier });
    expect(tokens.scope?.split(' ').sort()).toEqual(['customer_identity:write', 'earning_rule:read']);
    expect(await status(tokens.access_token)).toBe(200);

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(await status(refreshed.access_token)).toBe(200);
    expect(await refusedWithin(tokens.access_token, 2000)).toBe(true);

    await client.tokenRevocation(config, refreshed.refresh_token as string);
    expect(await refusedWithin(refreshed.access_token, 2000)).toBe(true);
  });

  it('openid-client 6 with client_secret_basic (RFC 6749 2.3.1 form-encoding)', async () => {
    const config = await client.discovery(
      base,
      seeded.confidentialId,
      seeded.secret,
      client.ClientSecretBasic(seeded.secret),
      { execute: [client.allowInsecureRequests], algorithm: 'oauth2' },
    );
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const callback = await approve(
      client.buildAuthorizationUrl(config, {
        redirect_uri: CONFIDENTIAL_REDIRECT,
        scope: SCOPE,
        state,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      }),
    );
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(await status(tokens.access_token)).toBe(200);
    await client.tokenRevocation(config, tokens.access_token);
    expect(await refusedWithin(tokens.access_token, 2000)).toBe(true);
  });

  it('oauth4webapi 3: a confidential client with client_secret_basic, and a public one on a loopback port of its choosing', async () => {
    const insecure = { [oauth.allowInsecureRequests]: true };
    const as = await oauth.processDiscoveryResponse(
      base,
      await oauth.discoveryRequest(base, { algorithm: 'oauth2', ...insecure }),
    );
    expect(as.authorization_response_iss_parameter_supported).toBe(true);

    for (const app of [
      {
        client: { client_id: seeded.confidentialId },
        auth: oauth.ClientSecretBasic(seeded.secret),
        redirectUri: CONFIDENTIAL_REDIRECT,
      },
      { client: { client_id: seeded.publicId }, auth: oauth.None(), redirectUri: 'http://127.0.0.1:53682/callback' },
    ]) {
      const verifier = oauth.generateRandomCodeVerifier();
      const authorizationUrl = new URL(as.authorization_endpoint as string);
      authorizationUrl.search = new URLSearchParams({
        client_id: app.client.client_id,
        redirect_uri: app.redirectUri,
        response_type: 'code',
        scope: SCOPE,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      }).toString();
      const callback = await approve(authorizationUrl);
      const params = oauth.validateAuthResponse(as, app.client, callback, oauth.expectNoState);
      const tokens = await oauth.processAuthorizationCodeResponse(
        as,
        app.client,
        await oauth.authorizationCodeGrantRequest(
          as,
          app.client,
          app.auth,
          params,
          app.redirectUri,
          verifier,
          insecure,
        ),
      );
      expect(await status(tokens.access_token)).toBe(200);

      const refreshed = await oauth.processRefreshTokenResponse(
        as,
        app.client,
        await oauth.refreshTokenGrantRequest(as, app.client, app.auth, tokens.refresh_token as string, insecure),
      );
      expect(await status(refreshed.access_token)).toBe(200);
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(as, app.client, app.auth, refreshed.refresh_token as string, insecure),
      );
      expect(await refusedWithin(refreshed.access_token, 2000)).toBe(true);
    }
  });
});

describe(`hardening against a server process (${testEngine})`, () => {
  const authorizeQuery = () =>
    `/oauth2/authorize?${new URLSearchParams({
      client_id: seeded.confidentialId,
      redirect_uri: CONFIDENTIAL_REDIRECT,
      response_type: 'code',
      state: 's',
    })}`;

  /** Browsers with the sign-in page open: each has its cookie and the form's hidden fields. */
  async function openSignInPages(count: number): Promise<Array<{ agent: PageAgent; fields: Record<string, string> }>> {
    const pages = [];
    for (let i = 0; i < count; i++) {
      const agent = new PageAgent();
      const page = await agent.get(authorizeQuery());
      expect(page.status).toBe(200);
      pages.push({ agent, fields: hiddenFields(await page.text()) });
    }
    return pages;
  }

  async function countRows(table: 'oauth_sessions' | 'oauth_sign_in_failures'): Promise<number> {
    const db = openDb(database.url, { poolMax: 1 });
    try {
      const row = await db.kysely
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    } finally {
      await db.close();
    }
  }

  it('anonymous requests for the sign-in page store nothing', async () => {
    const before = await countRows('oauth_sessions');
    const answers = await Promise.all(
      Array.from({ length: 300 }, () => fetch(new URL(authorizeQuery(), base)).then((r) => r.status)),
    );
    expect(new Set(answers)).toEqual(new Set([200]));
    expect(await countRows('oauth_sessions')).toBe(before);
  });

  /**
   * How many attempts the sign-in throttle can check within `ms` for a key with `free` free
   * attempts: those, then one more each time a wait (1 s, 2 s, 4 s …) has run out.
   */
  function admittable(free: number, ms: number): number {
    let admitted = free;
    for (let wait = 1000, passed = wait; passed <= ms; wait *= 2, passed += wait) admitted++;
    return admitted;
  }

  it('concurrent wrong passwords for one email from one address: at most 5 are checked, then the right one waits', async () => {
    const email = 'throttled@standard-shop.example';
    await withServices(database.url, async (services) => {
      const account = await services.accounts.create('Throttled');
      await services.users.create(account.id, { email, password: PASSWORD });
    });
    const pages = await openSignInPages(30);
    const started = Date.now();
    const answers = await Promise.all(
      pages.map(({ agent, fields }, i) =>
        agent
          .post('/oauth2/sign-in', { ...fields, email, password: i === 29 ? PASSWORD : `wrong ${i}` })
          .then((r) => r.status),
      ),
    );
    const checked = answers.filter((code) => code !== 429);
    expect(checked.length, answers.join(',')).toBeLessThanOrEqual(admittable(5, Date.now() - started));
    expect(
      checked.every((code) => code === 400 || code === 303),
      answers.join(','),
    ).toBe(true);
    // The right password now, alone: slowed, never locked out. It waits its Retry-After, then signs in.
    const [late] = await openSignInPages(1);
    const signIn = () => late?.agent.post('/oauth2/sign-in', { ...late.fields, email, password: PASSWORD });
    let again = await signIn();
    if (again?.status === 429) {
      await sleep(Number(again.headers.get('retry-after')) * 1000);
      again = await signIn();
    }
    expect(again?.status).toBe(303);
  });

  it('concurrent sign-ins from one address across many emails: at most 50 are checked', async () => {
    const pages = await openSignInPages(100);
    const started = Date.now();
    const answers = await Promise.all(
      pages.map(({ agent, fields }, i) =>
        agent
          .post('/oauth2/sign-in', { ...fields, email: `guess-${i}@standard-shop.example`, password: 'guess' })
          .then((r) => r.status),
      ),
    );
    const most = admittable(50, Date.now() - started);
    expect(answers.filter((code) => code !== 429).length, answers.join(',')).toBeLessThanOrEqual(most);
    expect(answers.filter((code) => code === 429).length).toBeGreaterThanOrEqual(100 - most);
  });

  it('answers a client that half-closes its side after sending, GET and POST alike', async () => {
    const get = `GET /v1/earning_rules?limit=5 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${seeded.apiKey}\r\n\r\n`;
    const body = 'grant_type=refresh_token&refresh_token=ort_unknown&client_id=app_x';
    const post =
      `POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body}`;
    const halfClose = (request: string) =>
      new Promise<string>((resolve) => {
        let data = '';
        const socket = connect(Number(base.port), '127.0.0.1', () => socket.end(request));
        socket.on('data', (chunk) => {
          data += chunk;
        });
        socket.on('close', () => resolve(data));
        socket.on('error', () => resolve(data));
      });
    const answers: string[] = [];
    for (let i = 0; i < 10; i++) answers.push(await halfClose(get), await halfClose(post));
    const statuses = answers.map((answer) => /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 'none');
    expect(statuses.filter((_, i) => i % 2 === 0)).toEqual(Array(10).fill('200'));
    expect(statuses.filter((_, i) => i % 2 === 1)).toEqual(Array(10).fill('400'));
  });
});
