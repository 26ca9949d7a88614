import { afterEach, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { authorize, exchange, type OAuthFixture, postForm, setupOAuth } from '../oauth/helpers.js';

const LIMIT = 10;

interface Tokens {
  access_token: string;
  refresh_token: string;
}

describe('the per-credential rate limit of OAuth access tokens', () => {
  let t: TestApp | undefined;
  afterEach(async () => t?.close());

  async function grantTokens(f: OAuthFixture): Promise<Tokens> {
    const { code } = await authorize(t!, f);
    const response = await exchange(t!, f, code);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<Tokens>();
  }

  async function refresh(f: OAuthFixture, tokens: Tokens): Promise<Tokens> {
    const response = await postForm(t!, '/oauth2/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: f.clientId,
      client_secret: f.clientSecret ?? undefined,
    });
    expect(response.statusCode, response.body).toBe(200);
    return response.json<Tokens>();
  }

  it('holds per grant: refreshing before every 10 calls gives no new allowance', async () => {
    t = await createTestApp({ RATE_LIMIT_PER_SECOND: String(LIMIT) });
    const f = await setupOAuth(t);
    let tokens = await grantTokens(f);

    const statuses: number[] = [];
    const started = Date.now();
    for (let round = 0; round < 5; round++) {
      for (let call = 0; call < LIMIT; call++) {
        const response = await t.app.inject({
          method: 'GET',
          url: '/v1/earning_rules',
          headers: bearer(tokens.access_token),
        });
        statuses.push(response.statusCode);
      }
      tokens = await refresh(f, tokens);
    }
    const elapsed = Date.now() - started;

    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const answered = statuses.filter((s) => s === 200).length;
    expect(answered).toBeGreaterThanOrEqual(LIMIT);
    // A window opens at a key's first request and lasts a second, so `elapsed` spans at most
    // this many of them (one, unless the machine is very slow). Per token, it would be 50.
    expect(answered).toBeLessThanOrEqual(LIMIT * (Math.floor(elapsed / 1000) + 1));
  });

  it('gives the tokens of one grant one rate-limit key, and other grants and CLI tokens their own', async () => {
    t = await createTestApp();
    const f = await setupOAuth(t);
    const first = await grantTokens(f);
    const refreshed = await refresh(f, first);
    const other = await grantTokens(f);
    const key = async (token: string) => (await t!.services.auth.authenticate(token))?.rateLimitKey;

    expect(await key(first.access_token)).toBeUndefined(); // revoked by the refresh
    const grantKey = await key(refreshed.access_token);
    expect(grantKey).toMatch(/^[0-9a-f]{32}$/);
    expect(await key((await refresh(f, refreshed)).access_token)).toBe(grantKey);
    expect(await key(other.access_token)).not.toBe(grantKey);

    // Issued through the CLI (no grant): each token counts on its own.
    const issue = () => t!.services.auth.issueAccessToken({ accountId: f.accountId, clientId: f.clientId });
    const [a, b] = [(await issue()).access_token, (await issue()).access_token];
    expect(await key(a)).toMatch(/^[0-9a-f]{32}$/);
    expect(await key(a)).not.toBe(await key(b));
    expect(await key(a)).not.toBe(grantKey);
  });
});
