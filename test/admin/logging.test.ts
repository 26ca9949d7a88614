import { afterEach, beforeEach, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createMerchant, PASSWORD, signedIn } from './helpers.js';

let t: TestApp;
const lines: string[] = [];

beforeEach(async () => {
  t = await createTestApp({}, { logLines: lines });
});
afterEach(async () => t.close());

it('never logs the password, the session cookie, the CSRF token or a new API key, even at trace level, uploads included', async () => {
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
  // An upload: the multipart plugin logs its parser's options, the request's headers among them.
  const boundary = 'logged-upload';
  const upload = await t.app.inject({
    method: 'POST',
    url: '/admin/imports',
    headers: {
      cookie: `loyalty_admin_session=${session}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
    },
    payload: [
      `--${boundary}`,
      'Content-Disposition: form-data; name="csrf_token"',
      '',
      csrf,
      `--${boundary}`,
      'Content-Disposition: form-data; name="file"; filename="customers.csv"',
      'Content-Type: text/csv',
      '',
      'email,first_name',
      'logged@example.com,Logged',
      `--${boundary}--`,
      '',
    ].join('\r\n'),
  });
  expect(upload.statusCode, upload.body).toBe(303);

  const log = lines.join('');
  expect(log).toContain('/admin/api-keys'); // the log was written
  expect(log).toContain('busboy'); // with the upload's trace lines
  for (const secret of [PASSWORD, session, csrf, key]) expect(log).not.toContain(secret);
});
