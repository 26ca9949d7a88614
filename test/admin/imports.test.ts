import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { rowCount } from '../helpers/engine.js';
import { type ConsoleBrowser, createMerchant, fieldError, fieldValue, type Merchant, signedIn } from './helpers.js';

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
    expect(page.body).toContain('first_name has a quote (&quot;) inside a cell that does not start with one');
    expect(page.body).toContain('first_name has a quote (&quot;) inside its quoted text that does not end it');
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

/** JSON Schema's words and paths, which a merchant never reads (issue 49 point 12). */
const SCHEMA_WORDS = /must match (?:pattern|format)|must be integer|must be (?:>=|<=)|must NOT|\/points_balance|row\./;

/** What an import writes, counted: a check without importing leaves every count as it was. */
async function written() {
  const tables = [
    'customers',
    'points_transactions',
    'opening_balances',
    'customer_identities',
    'events',
    'imports',
    'import_refusals',
    'import_emails',
  ] as const;
  return Object.fromEntries(
    await Promise.all(tables.map(async (table) => [table, await rowCount(t.db.kysely, table)])),
  );
}

describe('the console’s import and export in a merchant’s words (issue 49 point 12)', () => {
  it('shows each column’s first values on the mapping step, escaped and cut', async () => {
    const long = `${'y'.repeat(60)}@x.example`;
    const uploaded = await upload(
      'samples.csv',
      `Mail,Nick\n${long},<b>x</b>\nb@x.example,\nc@x.example,"Three, with a comma"\nd@x.example,Fourth\n`,
    );
    const page = await browser.get(uploaded.headers.location as string);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(
      `<p class="hint" id="f-mapping-0-hint">First 3 values: “${'y'.repeat(40)}…”, “b@x.example”, “c@x.example”</p>`,
    );
    expect(page.body).toContain(
      '<p class="hint" id="f-mapping-1-hint">First 3 values: “&lt;b&gt;x&lt;/b&gt;”, (empty), “Three, with a comma”</p>',
    );
    expect(page.body).not.toContain('<b>x</b>');
    expect(page.body).not.toContain('Fourth');
    // The select is described by its values.
    expect(page.body).toMatch(/<select id="f-mapping-1" name="mapping\.1" aria-describedby="f-mapping-1-hint">/);
  });

  it('checks without importing: the same counts and refusals as the import, and nothing written', async () => {
    await imported('first.csv', 'email,points_balance\nold@x.example,10\nkept@x.example,5\n');
    const content =
      'E-mail,Points,Born\n' +
      'new@x.example,20,1990-04-01\n' +
      'old@x.example,12.5,\n' +
      'kept@x.example,,1980-01-31\n' +
      'kept@x.example,,\n' +
      'bad,1,\n' +
      'date@x.example,1,01/02/1990\n' +
      'again@x.example,3,\n';
    const uploaded = await upload('second.csv', content);
    const mapping = uploaded.headers.location as string;
    const fields = { 'mapping.0': 'email', 'mapping.1': 'points_balance', 'mapping.2': 'date_of_birth' };
    const before = await written();
    const checked = await browser.submit(mapping, { ...fields, check: '1' });
    expect(checked.statusCode, checked.body).toBe(200);
    expect(await written()).toEqual(before);

    const counts = /<dl class="facts" id="check-counts">([\s\S]*?)<\/dl>/.exec(checked.body)?.[1] ?? '';
    expect([...counts.matchAll(/<dt>([^<]*)<\/dt><dd>([^<]*)<\/dd>/g)].map((m) => `${m[1]} ${m[2]}`)).toEqual([
      'To create 2',
      'To update 1',
      'Unchanged 0',
      'Refused 4',
    ]);
    expect(checked.body).toContain('Checked without importing: nothing was written. Every row of the file was read');
    const refusals = [...checked.body.matchAll(/<tr><th scope="row">(\d+)<\/th><td[^>]*>([^<]*)<\/td><\/tr>/g)].map(
      (m) => [Number(m[1]), m[2]],
    );
    expect(refusals).toEqual([
      [3, 'points_balance must be a whole number of points, 0 or more, such as 120, got &quot;12.5&quot;'],
      [5, 'email is the same as line 4&#39;s: a customer appears once per file'],
      [6, 'email must be an email address, such as name@example.com (at most 254 characters), got &quot;bad&quot;'],
      [7, 'date_of_birth must be a date written YYYY-MM-DD, such as 1990-04-01, got &quot;01/02/1990&quot;'],
    ]);
    expect(checked.body).not.toMatch(SCHEMA_WORDS);
    // The form is shown again as it was sent, ready to start.
    expect(checked.body).toMatch(/<option value="date_of_birth" selected>/);

    // The import itself does what the check said.
    const started = await browser.submit(mapping, fields);
    expect(started.statusCode, started.body).toBe(303);
    const importId = Number((started.headers.location as string).split('/').pop());
    while (!(await t.services.imports.step(importId, performance.now()))) {
      // A step a batch.
    }
    expect(await t.services.imports.progress(merchant.accountId, importId)).toMatchObject({
      rows: 7,
      created: 2,
      updated: 1,
      unchanged: 0,
      refused: 4,
    });
    const run = await browser.get(started.headers.location as string);
    const ran = [...run.body.matchAll(/<tr><th scope="row">(\d+)<\/th><td[^>]*>([^<]*)<\/td><\/tr>/g)].map((m) => [
      Number(m[1]),
      m[2],
    ]);
    expect(ran).toEqual(refusals);
    expect((await written()).customers).toBe(before.customers + 2);
  });

  it('refuses a mapping without email in the console’s words, not the CLI’s', async () => {
    const uploaded = await upload('no-email.csv', 'Mail,Name\na@x.example,A\n');
    const refused = await browser.submit(uploaded.headers.location as string, {
      'mapping.0': '',
      'mapping.1': 'first_name',
      check: '1',
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain(
      '<p class="warning" role="alert">No column is read as email: choose email for the column that holds the customers’ email addresses</p>',
    );
    expect(refused.body).not.toContain('--map');
  });

  it('shows the export form again with the values kept and the error at its field', async () => {
    const page = await browser.get(
      '/admin/exports?kind=points-transactions&format=jsonl&updated_at_min=yesterday&customer_id=7',
    );
    expect(page.statusCode).toBe(400);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('<h1>Import and export</h1>');
    // Still in its section of the navigation.
    expect(page.body).toContain('href="/admin/imports" aria-current="page"');
    expect(fieldValue(page.body, 'updated_at_min')).toBe('yesterday');
    expect(fieldValue(page.body, 'customer_id')).toBe('7');
    expect(page.body).toMatch(/<option value="points-transactions" selected>/);
    expect(page.body).toMatch(/<option value="jsonl" selected>/);
    expect(fieldError(page.body, 'updated_at_min')).toBe(
      'This must be a time with its time zone (ISO 8601), such as 2026-01-31T00:00:00Z, got &quot;yesterday&quot;.',
    );
    expect(page.body).toMatch(/<input id="f-updated_at_min" [^>]*aria-invalid="true"/);
    expect(page.body).toContain('The export has 1 error: nothing was downloaded.');
    expect(page.body).toContain('<a href="#f-updated_at_min">Changed since: This must be a time');
    expect(page.body).not.toMatch(SCHEMA_WORDS);

    const badId = await browser.get('/admin/exports?kind=activities&customer_id=01');
    expect(badId.statusCode).toBe(400);
    expect(fieldValue(badId.body, 'customer_id')).toBe('01');
    expect(fieldError(badId.body, 'customer_id')).toBe(
      'This must be a customer id: a whole number from 1, written without leading zeros, such as 42, got &quot;01&quot;.',
    );
    // A good filter still downloads.
    const good = await browser.get('/admin/exports?kind=customers&format=csv&updated_at_min=2026-01-01T00:00:00Z');
    expect(good.statusCode).toBe(200);
    expect(good.headers['content-disposition']).toMatch(/^attachment; filename="customers-/);
  });
});
