import { afterEach, beforeEach, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { authorize, exchange, pkcePair, postForm, setupOAuth } from './helpers.js';

let t: TestApp;
const lines: string[] = [];

beforeEach(async () => {
  t = await createTestApp({}, { logLines: lines });
});
afterEach(async () => t.close());

it('never logs passwords, codes, tokens, client secrets or session ids, even at trace level', async () => {
  const f = await setupOAuth(t);
  const { verifier, challenge } = pkcePair();
  const { code } = await authorize(t, f, { code_challenge: challenge, code_challenge_method: 'S256' });
  const tokens = (await exchange(t, f, code, { code_verifier: verifier })).json();
  await exchange(t, f, code, { code_verifier: verifier }); // reuse: an error path
  await exchange(t, f, 'oac_x', { client_secret: 'cs_wrong-secret-attempt' });
  await postForm(t, '/oauth2/token', {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token,
    client_id: f.clientId,
    client_secret: f.clientSecret as string,
  });
  await postForm(t, '/oauth2/revoke', {
    token: tokens.access_token,
    client_id: f.clientId,
    client_secret: f.clientSecret as string,
  });

  const log = lines.join('');
  expect(log).toContain('/oauth2/token'); // the log was written
  const secrets = [
    f.password,
    code,
    verifier,
    tokens.access_token,
    tokens.refresh_token,
    f.clientSecret as string,
    'cs_wrong-secret-attempt',
  ];
  for (const secret of secrets) expect(log).not.toContain(secret);
  expect(log).not.toMatch(/oas_[0-9A-Za-z]{40}/);
  expect(log).not.toMatch(/ort_[0-9A-Za-z]{40}/);
  expect(log).not.toMatch(/oa2_[0-9A-Za-z]{40}/);
  expect(log).not.toMatch(/oac_[0-9A-Za-z]{40}/);
});
