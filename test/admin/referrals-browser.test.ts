/// <reference lib="dom" />
// The functions passed to page.evaluate run in the browser.
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUrl, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import {
  axeFailures,
  launchChromium,
  phoneProblems,
  chromiumRunnable as runnable,
  signInToConsole,
} from '../helpers/browser.js';
import { withServices } from '../helpers/seed.js';
import { ROOT, type ServerProcess, startServer } from '../helpers/server-process.js';

// Issue 30, "the console journey in Chromium": a merchant configures the referral program in the
// console, opens a customer and copies their referral URL, follows it (302 to the landing URL with
// `ref`: the redirect is asserted on the response, the browser never leaves for the store, since
// the network is closed), the store creates a referral for a friend through the API and records
// the friend's qualifying order, and the merchant sees the referral completed in the list.

const ARTIFACTS = join(ROOT, 'test-artifacts', 'console', testEngine);
const EMAIL = 'owner@referrals-shop.example';
const PASSWORD = 'a long console password';
const LANDING = 'https://shop.example/welcome?utm_source=referral';
const JANE = 'jane@referrals-shop.example';
const FRIEND = 'a.friend.with.a.rather.long.address@subdomain.example-shop.com';

/**
 * A port free right now. The server is told it (not PORT=0) so that the referral URLs it prints
 * lead back to it: they are built from REFERRAL_BASE_URL, which must be known before it listens.
 */
async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.runIf(runnable)(`the console's referrals in a real browser (Chromium, server process, ${testEngine})`, () => {
  let database: TestDatabaseUrl;
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  let context: BrowserContext;
  let seeded: { apiKey: string; order: string; janeId: number };
  const cspViolations: string[] = [];
  /** Pages the journey saw, for the phone-width and accessibility pass. */
  const visited = new Set<string>();

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    seeded = await withServices(database.url, async (services) => {
      const account = await services.accounts.create('Referrals Shop');
      await services.users.create(account.id, { email: EMAIL, password: PASSWORD });
      const order = await services.activityTypes.create(account.id, { name: 'Place an order' });
      const jane = await services.customers.create(account.id, { email: JANE, first_name: 'Jane' });
      const key = await services.auth.createApiKey(account.id);
      return { apiKey: key.key, order: order.token, janeId: jane.id };
    });
    const port = await freePort();
    server = await startServer({
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
      PORT: String(port),
      REFERRAL_BASE_URL: `http://127.0.0.1:${port}/r`,
    });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    // The copy button writes to the clipboard; the test reads it back, as a paste would.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
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

  async function seen(page: Page, name: string): Promise<void> {
    const url = new URL(page.url());
    visited.add(`${url.pathname}${url.search}`);
    await page.screenshot({ path: join(ARTIFACTS, `referrals-${name}.png`), fullPage: true });
  }

  const api = (path: string, body: object) =>
    fetch(`${base()}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('configures the program, copies a customer’s referral URL that leads to the store, and sees a referral complete', async () => {
    const page = await openPage();
    await signInToConsole(page, base(), EMAIL, PASSWORD);
    await expect(page.locator('#referral-referrals .figure').textContent()).resolves.toBe('0');

    // The program: every field, first refused without a landing URL (the message at the field).
    await page.getByRole('link', { name: 'Referral settings', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Referral settings' }).waitFor();
    await page.getByLabel('Qualifying activity type').selectOption(seeded.order);
    await page.getByLabel('Minimum amount').fill('20');
    await page.locator('[name="sender_reward.name"]').fill('$5 off coupon');
    await page.locator('[name="sender_reward.image.url"]').fill('https://cdn.example.com/5-off.png');
    await page.locator('[name="receiver_reward.name"]').fill('10% off your first order');
    await page.locator('[name="receiver_reward.image.url"]').fill('https://cdn.example.com/10-off.png');
    // The referrer is rewarded with points: the points field shows only once Points is chosen (CSS, no script).
    const senderPoints = page.locator('#f-sender_reward-points');
    expect(await senderPoints.isVisible()).toBe(false);
    await page.locator('#f-sender_reward-fulfillment-points').check();
    expect(await senderPoints.isVisible()).toBe(true);
    await senderPoints.fill('500');
    expect(await page.locator('#f-receiver_reward-points').isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Save referral settings' }).click();
    await page.getByText('The form has 1 error: nothing was saved.').waitFor();
    await expect(page.locator('#f-landing_url-error').textContent()).resolves.toBe(
      'Error: This is required for an active program.',
    );
    expect(await page.getByLabel('Qualifying activity type').inputValue()).toBe(seeded.order);
    expect(await senderPoints.inputValue()).toBe('500');
    await seen(page, '01-program-refused');
    await page.getByLabel('Landing URL').fill(LANDING);
    await page.getByRole('button', { name: 'Save referral settings' }).click();
    await page.waitForURL('**/admin/referral-settings?notice=saved');
    await page.getByText('Saved.').waitFor();
    await expect(page.locator('#program-state .badge').textContent()).resolves.toBe('Running');
    await seen(page, '02-program');

    // Jane's page: her referral URL, copied with the button and read back from the clipboard.
    await page.getByRole('link', { name: 'Customers', exact: true }).click();
    await page.getByRole('link', { name: JANE }).click();
    const field = page.getByLabel('Referral URL');
    const referralUrl = await field.inputValue();
    expect(referralUrl).toMatch(new RegExp(`^${base()}/r/[0-9A-Za-z]{8,}$`));
    await page.locator('button[data-copy="referral-url"]').click();
    await page.getByText('Copied.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(referralUrl);
    await expect(page.locator('#started-referrals').textContent()).resolves.toBe(
      'This customer has referred nobody yet.',
    );
    await seen(page, '03-customer');

    // Following it: 302 to the landing URL with `ref`, asserted on the answer (the store is not reachable here).
    const code = referralUrl.split('/').pop() as string;
    const followed = await page.request.get(referralUrl, { maxRedirects: 0 });
    expect(followed.status()).toBe(302);
    const landing = new URL(followed.headers().location as string);
    expect(`${landing.origin}${landing.pathname}`).toBe('https://shop.example/welcome');
    expect(landing.searchParams.get('ref')).toBe(code);
    expect(landing.searchParams.get('utm_source')).toBe('referral');

    // The store sends the friend's email with the code: a referral, the friend rewarded at once.
    const made = await api('/v1/referrals', { referral: { referral_code: code, receiver_customer_email: FRIEND } });
    expect(made.status).toBe(201);
    const referral = (
      (await made.json()) as { referral: { id: number; receiver_reward_fulfillment: { code: string } } }
    ).referral;
    await page.getByRole('link', { name: 'Referrals', exact: true }).click();
    const row = page.locator(`#referral-${referral.id}`);
    await expect(row.locator('.badge').textContent()).resolves.toBe('Pending');
    await expect(row.textContent()).resolves.toContain(referral.receiver_reward_fulfillment.code);
    await seen(page, '04-referrals-pending');

    // The friend's qualifying order, through the API: the referral completes, Jane gets her points.
    const ordered = await api('/v1/activities', {
      activity: { token: seeded.order, customer_email: FRIEND, properties: { amount: '25.00' } },
    });
    expect(ordered.status).toBe(201);
    await page.reload();
    await expect(row.locator('.badge').textContent()).resolves.toBe('Completed');
    await expect(row.textContent()).resolves.toContain('+500 Points');
    await expect(row.textContent()).resolves.toContain(JANE);
    await expect(row.textContent()).resolves.toContain(FRIEND);
    await page.getByLabel('Status').selectOption('completed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL('**/admin/referrals?status=completed**');
    await expect(page.locator('#referrals tbody tr').count()).resolves.toBe(1);
    await seen(page, '05-referrals-completed');

    // Jane's page lists it, and leads to her referrals in the list.
    await row.getByRole('link', { name: JANE }).click();
    await expect(page.locator('#balance').textContent()).resolves.toBe('500 Points');
    await expect(page.locator('#started-referrals').textContent()).resolves.toContain('Completed');
    await page.getByRole('link', { name: /^All referrals of this customer/ }).click();
    await page.waitForURL(`**/admin/referrals?sender=${seeded.janeId}`);
    expect(await page.getByLabel('Referred by').inputValue()).toBe(JANE);
    await expect(page.locator('#referrals tbody tr').count()).resolves.toBe(1);

    // The overview's figures of the last 30 days.
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    const figure = (id: string) => page.locator(`#${id} .figure`).textContent();
    await expect(figure('referral-clicks')).resolves.toBe('1');
    await expect(figure('referral-referrals')).resolves.toBe('1');
    await expect(figure('referral-completed')).resolves.toBe('1');
    await expect(figure('referral-conversion')).resolves.toBe('100%');
    await expect(figure('referral-rewards')).resolves.toBe('2');
    await seen(page, '06-overview');
    expect(cspViolations).toEqual([]);
    await page.close();
  }, 120_000);

  it('fits a phone’s width, and has no serious or critical axe-core violation, on every referrals page', async () => {
    expect(visited.size).toBeGreaterThan(0);
    const paths = [
      ...new Set([
        '/admin/overview',
        '/admin/referral-settings',
        '/admin/referrals',
        `/admin/customers/${seeded.janeId}`,
        ...[...visited].filter((path) => !path.includes('notice=')),
      ]),
    ];
    expect(
      await phoneProblems(browser as Browser, await context.cookies(), base(), paths, join(ARTIFACTS, 'referrals')),
    ).toEqual([]);

    // axe is injected as a script, which the console's CSP forbids: this context alone bypasses it.
    const audit = await (browser as Browser).newContext({ bypassCSP: true, viewport: { width: 1100, height: 900 } });
    await audit.addCookies(await context.cookies());
    const auditPage = await audit.newPage();
    const failures: string[] = [];
    const check = async (label: string) => failures.push(...(await axeFailures(auditPage, label)));
    for (const path of paths) {
      await auditPage.goto(`${base()}${path}`);
      await check(path);
    }
    // A refused program form, with its summary and messages at the fields.
    await auditPage.goto(`${base()}/admin/referral-settings`);
    await auditPage.getByLabel('Landing URL').fill('');
    await auditPage.locator('#f-receiver_reward-fulfillment-points').check();
    await auditPage.getByRole('button', { name: 'Save referral settings' }).click();
    await auditPage.getByText('The form has 2 errors: nothing was saved.').waitFor();
    await check('refused program form');
    await audit.close();
    expect(failures).toEqual([]);
    expect(cspViolations).toEqual([]);
  }, 120_000);
});
