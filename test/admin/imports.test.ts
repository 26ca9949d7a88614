import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleBrowser, createMerchant, type Merchant, signedIn } from './helpers.js';

// Issue 49 through the console: an upload with a stray quote answered 500 ("Cannot access
// 'extraLines' before initialization"), and a run whose bad line came later stayed "running",
// retried with a growing backoff. The bad line is now a refusal on the run's page, the run
// finishes; the mapping page's "Set balances to this file's" is the CLI's --set-balances.

let t: TestApp;
let merchant: Merchant;
let browser: ConsoleBrowser;
beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t);
  browser = await signedIn(t, merchant);
});
afterEach(async () => {
  await t.close();
});

/** Posts `content` as the upload form's file, with the session's CSRF token first (as the form sends it). */
async function upload(name: string, content: string) {
  const boundary = 'loyaltyboundary49';
  const body =
    `--${boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n${await browser.csrf()}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n` +
    `Content-Type: text/csv\r\n\r\n${content}\r\n--${boundary}--\r\n`;
  const cookie = [...browser.cookies]
    .filter(([, c]) => '/admin/imports'.startsWith(c.path))
    .map(([n, c]) => `${n}=${c.value}`)
    .join('; ');
  return t.app.inject({
    method: 'POST',
    url: '/admin/imports',
    headers: { cookie, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload: body,
  });
}

/** Uploads, maps as suggested (with `fields`), and runs the job to its end; the run's page. */
async function imported(name: string, content: string, fields: Record<string, string> = {}) {
  const uploaded = await upload(name, content);
  expect(uploaded.statusCode, uploaded.body).toBe(303);
  const mapping = uploaded.headers.location as string;
  const names = (await t.services.imports.uploaded(merchant.accountId, Number(mapping.split('/').pop()))).names;
  const started = await browser.submit(mapping, {
    ...Object.fromEntries(names.map((n, i) => [`mapping.${i}`, n])),
    ...fields,
  });
  expect(started.statusCode, started.body).toBe(303);
  const runPath = started.headers.location as string;
  const importId = Number(runPath.split('/').pop());
  while (!(await t.services.imports.step(importId, performance.now()))) {
    // A step a batch, as the job runner runs them.
  }
  return { run: await t.services.imports.progress(merchant.accountId, importId), page: await browser.get(runPath) };
}

describe('the console’s imports (issue 49)', () => {
  it('shows a running import without reloading itself (axe: meta-refresh), with a link that shows the progress', async () => {
    const uploaded = await upload('running.csv', 'email\nrun1@x.example\n');
    const mapping = uploaded.headers.location as string;
    const started = await browser.submit(mapping, { 'mapping.0': 'email' });
    expect(started.statusCode, started.body).toBe(303);
    const runPath = started.headers.location as string;
    const page = await browser.get(runPath);
    expect(page.body).toContain('Running:');
    expect(page.body).not.toContain('http-equiv');
    expect(page.body).toContain(`<a href="${runPath}">Show the progress now</a>`);
  });

  it('refuses a stray quote by its line, and reads the lines after it', async () => {
    const { run, page } = await imported(
      'q.csv',
      'email,first_name\nqa1@x.example,a"b\nqa2@x.example,"c"d\nqa3@x.example,ok\n',
    );
    expect(run).toMatchObject({ status: 'finished', rows: 3, created: 1, refused: 2 });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Invalid Opening Quote');
    expect(page.body).toContain('a quote inside a quoted cell does not end it');
  });

  it('refuses a balance already imported, and sets it with the box ticked', async () => {
    await imported('customers.csv', 'email,points_balance\nann@x.example,250\n');
    const refused = await imported('customers (1).csv', 'email,points_balance\r\nann@x.example,100\r\n');
    expect(refused.run).toMatchObject({ refused: 1, setBalances: false });
    expect(refused.page.body).toContain('already has an imported balance (250 points, import');
    const set = await imported('fixed.csv', 'email,points_balance\nann@x.example,100\n', { set_balances: '1' });
    expect(set.run).toMatchObject({ refused: 0, updated: 1, setBalances: true });
    const [ann] = await t.services.customers.list(merchant.accountId);
    expect((await t.services.customers.get(merchant.accountId, ann!.id)).points_balance).toBe(100);
  });
});
