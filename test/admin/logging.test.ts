import { Writable } from 'node:stream';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createTestDb, FakeClock, type TestApp, type TestDb } from '../helpers/app.js';
import { createMerchant, PASSWORD, signedIn } from './helpers.js';

let testDb: TestDb;
let t: TestApp;
const lines: string[] = [];

beforeEach(async () => {
  testDb = await createTestDb();
  const config = loadConfig({ RATE_LIMIT_PER_SECOND: '0' });
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const clock = new FakeClock();
  const app = await buildApp({ config, db: testDb.db, clock, logger: { level: 'trace', stream } });
  await app.ready();
  t = { app, services: app.services, db: testDb.db, url: testDb.url, clock, config, close: async () => {} };
});
afterEach(async () => {
  await t.app.close();
  await testDb.destroy();
});

it('never logs the password, the session cookie, the CSRF token or a new API key, even at trace level', async () => {
  const merchant = await createMerchant(t);
  const browser = await signedIn(t, merchant);
  const session = browser.cookies.get('loyalty_admin_session')?.value as string;
  const csrf = await browser.csrf();
  const created = await browser.submit('/admin/api-keys', { scopes: 'earning_rule:read' });
  const key = /readonly value="(api_[^"]+)"/.exec(created.body)?.[1] as string;
  expect(key).toBeTruthy();
  // A refused sign-in and a refused form: the error paths log too.
  await browser.post('/admin/sign-in', { csrf_token: 'x', email: merchant.email, password: `${PASSWORD}-wrong` });
  await browser.postRaw('/admin/activity-types', `name=x&csrf_token=${csrf.slice(1)}`);

  const log = lines.join('');
  expect(log).toContain('/admin/api-keys'); // the log was written
  for (const secret of [PASSWORD, session, csrf, key]) expect(log).not.toContain(secret);
});
