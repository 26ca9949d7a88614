import { afterEach, beforeEach, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createMerchant, PASSWORD, signedIn } from './helpers.js';

let t: TestApp;
const lines: string[] = [];

beforeEach(async () => {
  t = await createTestApp({}, { logLines: lines });
});
afterEach(async () => t.close());

it('never logs the password, the session cookie, the CSRF token or a new API key, even at trace level', async () => {
  const merchant = await createMerchant(t);
  const browser = await signedIn(t, merchant);
  const session = browser.cookies.get('loyalty_admin_session')?.value as string;
  const csrf = await browser.csrf();
  const sent = await browser.submit('/admin/api-keys', { name: 'Logged', scopes: 'earning_rule:read' });
  // Post/redirect/get: the key is shown by the page the form redirects to.
  const created = await browser.get(sent.headers.location as string);
  const key = /readonly value="(api_[^"]+)"/.exec(created.body)?.[1] as string;
  expect(key).toBeTruthy();
  // A refused sign-in and a refused form: the error paths log too.
  await browser.post('/admin/sign-in', { csrf_token: 'x', email: merchant.email, password: `${PASSWORD}-wrong` });
  await browser.postRaw('/admin/activity-types', `name=x&csrf_token=${csrf.slice(1)}`);

  const log = lines.join('');
  expect(log).toContain('/admin/api-keys'); // the log was written
  for (const secret of [PASSWORD, session, csrf, key]) expect(log).not.toContain(secret);
});
