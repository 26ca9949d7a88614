/// <reference lib="dom" />
// The functions passed to page.evaluate run in the browser.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUrl, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import {
  axeFailures,
  brokenWords,
  chromiumRunnable,
  launchChromium,
  overflowAt375,
  phoneProblems,
  signInToConsole,
} from '../helpers/browser.js';
import { withServices } from '../helpers/seed.js';
import { ROOT, type ServerProcess, startServer } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';

// Issue 32, "the console upload and download in Chromium": a merchant uploads another platform's
// export, maps its columns, watches the import run (a job of the real server process), reloads,
// downloads the refused rows, then downloads exports. What was imported is read back from the
// database, not from the pages.

const ARTIFACTS = join(ROOT, 'test-artifacts', 'console', testEngine);
const EMAIL = 'owner@moving-shop.example';
const PASSWORD = 'a long console password';
const IMPORT_WAIT_MS = 30_000;

/** Another platform's export: its own column names, one bad email and one duplicate, a column to ignore. */
const OTHER_PLATFORM_CSV = [
  'E-mail,Given name,Points,Lifetime points,Favourite colour',
  'ada@moving-shop.example,Ada,120,300,green',
  'grace@moving-shop.example,Grace,0,0,blue',
  'not an email,Bad,5,5,red',
  'ADA@moving-shop.example,Ada again,7,7,green',
  '"linus@moving-shop.example","Linus, the second",45,45,"multi',
  'line"',
].join('\r\n');

describe.runIf(chromiumRunnable)(
  `the console's import and export in a real browser (Chromium, server process, ${testEngine})`,
  () => {
    let database: TestDatabaseUrl;
    let server: ServerProcess | undefined;
    let browser: Browser | undefined;
    let context: BrowserContext;
    let accountId = 0;
    const cspViolations: string[] = [];
    /** The run the first test made, for the later ones. */
    let runPath = '';

    beforeAll(async () => {
      database = await createTestDatabaseUrl();
      accountId = await withServices(database.url, async (services) => {
        const account = await services.accounts.create('Moving Shop');
        await services.users.create(account.id, { email: EMAIL, password: PASSWORD });
        return account.id;
      });
      server = await startServer({ DATABASE_URL: database.url, LOG_LEVEL: 'info' });
      browser = await launchChromium();
      context = await browser.newContext({ viewport: { width: 1100, height: 900 }, acceptDownloads: true });
      mkdirSync(ARTIFACTS, { recursive: true });
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      await server?.stop('SIGKILL');
      await database?.drop();
    });

    const base = () => (server as ServerProcess).url;

    async function openPage(): Promise<Page> {
      const page = await context.newPage();
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
      });
      return page;
    }

    /** Clicks `trigger` and answers the downloaded file's name and text. */
    async function download(page: Page, trigger: () => Promise<void>): Promise<{ name: string; text: string }> {
      const [file] = await Promise.all([page.waitForEvent('download'), trigger()]);
      const path = await file.path();
      return { name: file.suggestedFilename(), text: readFileSync(path, 'utf8') };
    }

    it('uploads another platform’s file, maps its columns, runs it in the background and lists the refused rows', async () => {
      const page = await openPage();
      await signInToConsole(page, base(), EMAIL, PASSWORD);
      await page.getByRole('link', { name: 'Import and export', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Import and export' }).waitFor();

      // No file chosen: said so, nothing kept.
      await page.getByRole('button', { name: 'Upload and map columns' }).click();
      await expect(page.locator('#upload-error').textContent()).resolves.toBe('Choose a CSV file to upload.');

      await page.getByLabel('CSV file').setInputFiles({
        name: 'other-platform.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from(`\uFEFF${OTHER_PLATFORM_CSV}`),
      });
      await page.getByRole('button', { name: 'Upload and map columns' }).click();
      await page.waitForURL(/\/admin\/imports\/uploads\/\d+$/);
      await page.getByRole('heading', { level: 1, name: 'Map the columns of other-platform.csv' }).waitFor();
      // "E-mail" is recognised; the rest are mapped by hand.
      await expect(page.getByLabel('Column “E-mail”').inputValue()).resolves.toBe('email');
      await expect(page.getByLabel('Column “Favourite colour”').inputValue()).resolves.toBe('');
      // Each column shows its first values (issue 49 point 12), as the select's description.
      await expect(page.locator('#f-mapping-0-hint').textContent()).resolves.toBe(
        'First 3 values: “ada@moving-shop.example”, “grace@moving-shop.example”, “not an email”',
      );
      await expect(page.getByLabel('Column “Given name”').getAttribute('aria-describedby')).resolves.toBe(
        'f-mapping-1-hint',
      );
      await page.getByLabel('Column “Given name”').selectOption('first_name');
      await page.getByLabel('Column “Points”').selectOption('points_balance');
      // Two columns read as one: refused at its field, nothing started.
      await page.getByLabel('Column “Lifetime points”').selectOption('points_balance');
      await page.screenshot({ path: join(ARTIFACTS, 'imports-01-mapping.png'), fullPage: true });
      await page.getByRole('button', { name: 'Start the import' }).click();
      await page.getByText('points_balance is already read from "Points"').waitFor();
      await page.getByLabel('Column “Lifetime points”').selectOption('points_earned');

      // Checked first: what the import would do, and nothing written.
      await page.getByRole('button', { name: 'Check without importing' }).click();
      await page.getByRole('heading', { level: 2, name: 'What the import would do' }).waitFor();
      await expect(page.locator('#check-counts dd').allTextContents()).resolves.toEqual(['3', '0', '0', '2']);
      await expect(page.locator('#check-refusals tbody th').allTextContents()).resolves.toEqual(['4', '5']);
      await expect(page.locator('#check-refusals tbody td').first().textContent()).resolves.toBe(
        'email must be an email address, such as name@example.com (at most 254 characters), got "not an email"',
      );
      await expect(page.getByLabel('Column “Lifetime points”').inputValue()).resolves.toBe('points_earned');
      await expect(
        withServices(database.url, async (services) => (await services.customers.page(accountId, {})).customers),
      ).resolves.toEqual([]);
      await page.screenshot({ path: join(ARTIFACTS, 'imports-01b-checked.png'), fullPage: true });
      await page.getByRole('button', { name: 'Start the import' }).click();

      await page.waitForURL(/\/admin\/imports\/\d+$/);
      runPath = new URL(page.url()).pathname;
      // The page reloads itself while the job runs; a reload by hand reads the same progress.
      await eventually(async () => {
        await page.reload();
        return /^Finished/.test((await page.locator('#import-status').textContent()) ?? '');
      }, IMPORT_WAIT_MS);
      await expect(page.locator('#import-counts dt').allTextContents()).resolves.toEqual([
        'Created',
        'Updated',
        'Unchanged',
        'Refused',
      ]);
      await expect(page.locator('#import-counts dd').allTextContents()).resolves.toEqual(['3', '0', '0', '2']);
      const refusedLines = await page.locator('#refusals tbody th').allTextContents();
      expect(refusedLines).toEqual(['4', '5']);
      await expect(page.locator('#refusals tbody tr').nth(1).textContent()).resolves.toContain("same as line 2's");
      await page.screenshot({ path: join(ARTIFACTS, 'imports-02-finished.png'), fullPage: true });

      const refusals = await download(page, () =>
        page.getByRole('link', { name: 'Download every refused row (CSV)' }).click(),
      );
      expect(refusals.name).toMatch(/^refused-rows-of-import-\d+\.csv$/);
      const refusalLines = refusals.text.trim().split('\n');
      expect(refusalLines[0]).toBe('line,message');
      expect(refusalLines.slice(1).map((line) => line.split(',')[0])).toEqual(['4', '5']);

      // What the database holds: balances as one "Imported balance" each, points earned beyond it kept.
      const imported = await withServices(database.url, async (services) => {
        const page = await services.customers.page(accountId, {});
        return Promise.all(
          page.customers.map(async (customer) => ({
            email: customer.email,
            first_name: customer.first_name,
            points_balance: customer.points_balance,
            ledger: (
              await services.pointsTransactions.page(accountId, { customer_id: customer.id })
            ).points_transactions.map((t) => `${t.points_change} ${t.description}`),
          })),
        );
      });
      expect(imported.sort((a, b) => a.email.localeCompare(b.email))).toEqual([
        { email: 'ada@moving-shop.example', first_name: 'Ada', points_balance: 120, ledger: ['120 Imported balance'] },
        { email: 'grace@moving-shop.example', first_name: 'Grace', points_balance: 0, ledger: [] },
        {
          email: 'linus@moving-shop.example',
          first_name: 'Linus, the second',
          points_balance: 45,
          ledger: ['45 Imported balance'],
        },
      ]);

      // The list of runs links to it.
      await page.getByRole('link', { name: 'Back to import and export' }).click();
      await expect(page.locator('#imports tbody tr').first().locator('th, td').allTextContents()).resolves.toEqual([
        'other-platform.csv',
        'Finished',
        '5',
        '2',
        expect.stringMatching(/ UTC$/),
      ]);
      expect(cspViolations).toEqual([]);
      await page.close();
    }, 120_000);

    it('downloads exports as CSV and JSON Lines, filtered as the API filters, and refuses a bad filter at its field', async () => {
      const page = await openPage();
      await page.goto(`${base()}/admin/imports`);
      const customers = await download(page, () => page.getByRole('button', { name: 'Download' }).click());
      expect(customers.name).toMatch(/^customers-\d{4}-\d{2}-\d{2}\.csv$/);
      const lines = customers.text.trim().split('\n');
      expect(lines[0]).toBe(
        'email,first_name,last_name,date_of_birth,state,points_balance,points_earned,id,vip_tier_id,referral_url,created_at',
      );
      expect(
        lines
          .slice(1)
          .map((line) => line.split(',')[0])
          .sort(),
      ).toEqual(['ada@moving-shop.example', 'grace@moving-shop.example', 'linus@moving-shop.example']);
      // Points earned beyond the balance were kept: Ada's 300.
      expect(lines.find((line) => line.startsWith('ada@'))).toMatch(
        /^ada@moving-shop\.example,Ada,,,member,120,300,\d+,,/,
      );

      await page.getByLabel('Records').selectOption('points-transactions');
      await page.getByLabel('Format').selectOption('jsonl');
      const ledger = await download(page, () => page.getByRole('button', { name: 'Download' }).click());
      expect(ledger.name).toMatch(/^points-transactions-.*\.jsonl$/);
      const entries = ledger.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { points_change: number; description: string });
      expect(entries.map((entry) => `${entry.points_change} ${entry.description}`).sort()).toEqual([
        '120 Imported balance',
        '45 Imported balance',
      ]);

      // A filter the API would refuse: the form again, as it was, with the error at the field (issue 49
      // point 12; it was an error page with no way back).
      await page.getByLabel('Changed since').fill('yesterday');
      await page.getByRole('button', { name: 'Download' }).click();
      await page.getByRole('heading', { level: 1, name: 'Import and export' }).waitFor();
      await expect(page.getByLabel('Changed since').inputValue()).resolves.toBe('yesterday');
      await expect(page.getByLabel('Records').inputValue()).resolves.toBe('points-transactions');
      await expect(page.getByLabel('Format').inputValue()).resolves.toBe('jsonl');
      await expect(page.locator('#f-updated_at_min-error').textContent()).resolves.toBe(
        'Error: This must be a time with its time zone (ISO 8601), such as 2026-01-31T00:00:00Z, got "yesterday".',
      );
      await expect(page.getByLabel('Changed since').getAttribute('aria-invalid')).resolves.toBe('true');
      await expect(page.locator('main').textContent()).resolves.not.toMatch(/must match format|updated_at_min/);
      // Corrected, it downloads.
      await page.getByLabel('Changed since').fill('2026-01-01T00:00:00Z');
      const corrected = await download(page, () => page.getByRole('button', { name: 'Download' }).click());
      expect(corrected.name).toMatch(/^points-transactions-.*\.jsonl$/);
      await page.close();
    }, 60_000);

    it('fits a phone’s width, and has no serious or critical axe-core violation, on every import page', async () => {
      expect(runPath).toMatch(/^\/admin\/imports\/\d+$/);
      const page = await openPage();
      await page.goto(`${base()}/admin/imports`);
      await page.getByLabel('CSV file').setInputFiles({
        name: 'a-file-with-a-rather-long-name-from-the-old-platform-export-2026-11.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from(
          'email,first_name\nx@moving-shop.example,X\nnot-an-email-with-a-rather-long-local-part,<b>Y</b>\n',
        ),
      });
      await page.getByRole('button', { name: 'Upload and map columns' }).click();
      await page.waitForURL(/\/admin\/imports\/uploads\/\d+$/);
      const mappingPath = new URL(page.url()).pathname;
      await page.close();
      const paths = ['/admin/imports', mappingPath, runPath, '/admin/exports?kind=customers&updated_at_min=yesterday'];

      expect(
        await phoneProblems(browser as Browser, await context.cookies(), base(), paths, join(ARTIFACTS, 'imports')),
      ).toEqual([]);

      const audit = await (browser as Browser).newContext({ bypassCSP: true, viewport: { width: 1100, height: 900 } });
      await audit.addCookies(await context.cookies());
      const auditPage = await audit.newPage();
      const failures: string[] = [];
      for (const path of paths) {
        await auditPage.goto(`${base()}${path}`);
        failures.push(...(await axeFailures(auditPage, path)));
      }
      // The mapping step with a check's answer (a form's answer: no address of its own).
      await auditPage.goto(`${base()}${mappingPath}`);
      await auditPage.getByRole('button', { name: 'Check without importing' }).click();
      await auditPage.locator('#check-refusals').waitFor();
      failures.push(...(await axeFailures(auditPage, `${mappingPath} (checked)`)));
      await audit.close();
      expect(failures).toEqual([]);

      const phone = await (browser as Browser).newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
      await phone.addCookies(await context.cookies());
      const small = await phone.newPage();
      await small.goto(`${base()}${mappingPath}`);
      await small.getByRole('button', { name: 'Check without importing' }).click();
      await small.locator('#check-refusals').waitFor();
      await small.screenshot({ path: join(ARTIFACTS, 'imports-phone-checked.png'), fullPage: true });
      expect([...(await overflowAt375(small)), ...(await brokenWords(small))]).toEqual([]);
      await phone.close();
    }, 60_000);
  },
);
