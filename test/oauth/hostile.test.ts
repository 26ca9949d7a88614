import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { authorizeUrl, Browser, hiddenFields, type OAuthFixture, REDIRECT_URI, setupOAuth } from './helpers.js';

let t: TestApp;
let f: OAuthFixture;
beforeAll(async () => {
  t = await createTestApp();
  f = await setupOAuth(t);
});
afterAll(async () => t.close());

// Values an attacker might send: real ones, near misses, and junk of every shape.
const value = () =>
  fc.option(
    fc.oneof(
      fc.string(),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.constantFrom(
        REDIRECT_URI,
        'code',
        'token',
        'S256',
        'plain',
        'authorization_code',
        'refresh_token',
        'customer_identity:write earning_rule:read',
        '__proto__',
        'oac_0000000000000000000000000000000000000000',
        'ort_0000000000000000000000000000000000000000',
        '%00',
        'x'.repeat(3000),
      ),
    ),
    { nil: undefined },
  );
const form = (names: string[]) => fc.record(Object.fromEntries(names.map((name) => [name, value()])));
const encode = (fields: Record<string, string | undefined>) => {
  const body = new URLSearchParams();
  for (const [name, v] of Object.entries(fields)) if (v !== undefined) body.set(name, v);
  return body.toString();
};

it('never answers 5xx to hostile parameters, on any /oauth2 endpoint', async () => {
  const browser = new Browser(t.app);
  const page = await browser.get(
    authorizeUrl({ client_id: f.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state: 's' }),
  );
  const csrf = hiddenFields(page.body).csrf_token;
  const authorizeNames = [
    'client_id',
    'redirect_uri',
    'response_type',
    'scope',
    'state',
    'code_challenge',
    'code_challenge_method',
  ];
  await fc.assert(
    fc.asyncProperty(
      form(authorizeNames),
      form(['grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope', 'client_secret', 'token']),
      fc.boolean(),
      fc.option(fc.string(), { nil: undefined }),
      async (params, tokenForm, realClient, basic) => {
        const responses = await Promise.all([
          browser.get(authorizeUrl(params)),
          browser.post('/oauth2/sign-in', {
            ...params,
            csrf_token: csrf,
            email: tokenForm.code,
            password: tokenForm.token,
          }),
          browser.post('/oauth2/authorize', { ...params, csrf_token: csrf, decision: tokenForm.grant_type }),
          ...(['/oauth2/token', '/oauth2/revoke'] as const).map((url) =>
            t.app.inject({
              method: 'POST',
              url,
              headers: {
                'content-type': 'application/x-www-form-urlencoded',
                ...(basic !== undefined ? { authorization: `Basic ${basic}` } : {}),
              },
              payload: encode({ ...tokenForm, client_id: realClient ? f.clientId : params.client_id }),
            }),
          ),
        ]);
        for (const response of responses) expect(response.statusCode, response.body).toBeLessThan(500);
      },
    ),
    { numRuns: 40 },
  );
});
