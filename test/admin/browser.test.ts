/// <reference lib="dom" />
// The functions passed to page.evaluate run in the browser.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECTIONS } from '../../src/admin/views.js';
import { createTestDatabaseUrl, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { withServices } from '../helpers/seed.js';
import { ROOT, type ServerProcess, startServer } from '../helpers/server-process.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts', 'console', testEngine);
const EMAIL = 'owner@console-shop.example';
const PASSWORD = 'a long console password';
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// In CI a missing browser is a failure (chromium.launch throws); on a workstation without it the
// test is skipped, and says so.
const runnable = existsSync(CHROMIUM) || Boolean(process.env.CI);
if (!runnable) {
  console.warn(`[console browser test] skipped: ${CHROMIUM} does not exist (install Debian's chromium to run it).`);
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

describe.runIf(runnable)(`the merchant console in a real browser (Chromium, server process, ${testEngine})`, () => {
  let database: TestDatabaseUrl;
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  let context: BrowserContext;
  /** Pages the merchant saw, for the accessibility pass. */
  const visited = new Set<string>();
  const cspViolations: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    await withServices(database.url, async (services) => {
      const account = await services.accounts.create('Console Shop');
      await services.users.create(account.id, { email: EMAIL, password: PASSWORD });
    });
    server = await startServer({ DATABASE_URL: database.url, LOG_LEVEL: 'info' });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop('SIGKILL');
    await database?.drop();
  });

  const base = () => (server as ServerProcess).url;

  /** Notes the page for the accessibility pass and saves its screenshot. */
  async function seen(page: Page, name: string): Promise<void> {
    visited.add(new URL(page.url()).pathname);
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  }

  async function openPage(): Promise<Page> {
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    return page;
  }

  const api = (path: string, key: string, init: RequestInit = {}) =>
    fetch(`${base()}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
    });

  it('signs in, sets up an activity type, a rule and a key, sees an activity credited, adjusts points and revokes the key', async () => {
    const page = await openPage();
    await page.goto(`${base()}/admin`);
    expect(new URL(page.url()).pathname).toBe('/admin/sign-in');
    await seen(page, '01-sign-in');
    // The first Tab reaches the skip link: keyboard users can jump past the navigation.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/admin/overview');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Overview');
    // The stylesheet loads under the page's CSP.
    const background = await page
      .getByRole('link', { name: 'Overview' })
      .evaluate((link) => getComputedStyle(link.closest('header') as Element).backgroundColor);
    expect(background).toBe('rgb(17, 24, 39)');
    await seen(page, '02-overview');

    // An activity type; its token is shown to copy.
    await page.getByRole('link', { name: 'Activity types' }).click();
    await page.getByLabel('Name').fill('Place an order');
    await page.getByRole('button', { name: 'Create activity type' }).click();
    await page.getByText('Created.').waitFor();
    const token = await page.getByLabel('Token of Place an order').inputValue();
    expect(token).toMatch(/^activity_[0-9A-Za-z]{20}$/);
    await seen(page, '03-activity-types');

    // An earning rule bound to it: first refused (no image URL), with the message at the field.
    await page.getByRole('link', { name: 'Earning rules' }).click();
    await page.getByRole('link', { name: 'New earning rule' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Order placed');
    await page.getByLabel('Activity type').selectOption(token);
    await page.getByLabel('Points each time (fixed)').fill('50');
    await page.getByRole('button', { name: 'Save earning rule' }).click();
    await page.getByText('The form has 1 error: nothing was saved.').waitFor();
    expect(await page.getByLabel('Points each time (fixed)').inputValue()).toBe('50');
    await seen(page, '04-earning-rule-refused');
    await page.getByLabel('Image URL').fill('https://cdn.example.com/order.png');
    await page.getByRole('button', { name: 'Save earning rule' }).click();
    await page.waitForURL('**/admin/earning-rules?notice=created');
    await expect(page.getByRole('cell', { name: 'Place an order' }).count()).resolves.toBe(1);
    await seen(page, '05-earning-rules');

    // An API key with the scopes it needs, copied from the page that shows it once.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const key = await page.getByLabel('Your new API key').inputValue();
    expect(key).toMatch(/^api_/);
    await seen(page, '06-api-key-created');

    // The store reports an order with that key; the customer's page shows it with its points.
    const activity = await api('/v1/activities', key, {
      method: 'POST',
      body: JSON.stringify({ activity: { token, customer_email: 'jane@example.com', distinct_id: 'order-1' } }),
    });
    expect(activity.status).toBe(201);
    await page.getByRole('link', { name: 'Customers' }).click();
    await page.getByLabel('Find a customer by email').fill('Jane@Example.com');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'jane@example.com' }).click();
    await expect(page.locator('#balance').textContent()).resolves.toBe('50 Points');
    const row = page.getByRole('row', { name: /Place an order/ });
    await expect(row.textContent()).resolves.toContain('+50');
    await expect(row.textContent()).resolves.toContain('order-1');

    // A manual adjustment with a reason.
    await page.getByLabel('Points to add or remove').fill('25');
    await page.getByLabel('Reason').fill('Goodwill for a late delivery');
    await page.getByRole('button', { name: 'Adjust points' }).click();
    await page.getByText('Points adjusted.').waitFor();
    await expect(page.locator('#balance').textContent()).resolves.toBe('75 Points');
    const customer = (await (await api('/v1/customers?email=jane@example.com', key)).json()) as {
      customers: Array<{ points_balance: number }>;
    };
    expect(customer.customers[0]?.points_balance).toBe(75);
    await seen(page, '07-customer');

    // Revoking asks first; then the API refuses the key within a second.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('link', { name: /^Revoke…/ }).click();
    await seen(page, '08-revoke-confirm');
    await page.getByRole('button', { name: 'Revoke the key' }).click();
    const revokedAt = Date.now();
    await page.getByText('Revoked: it is refused from now on.').waitFor();
    let status = 0;
    while (Date.now() - revokedAt < 1000) {
      status = (await api('/v1/earning_rules', key)).status;
      if (status === 401) break;
    }
    expect(status).toBe(401);
    await seen(page, '09-api-keys');

    // The other sections, each seen once.
    for (const [name, file] of [
      ['VIP tiers', '10-vip-tiers'],
      ['Points products', '11-points-products'],
      ['Points settings', '12-points-settings'],
      ['Referral settings', '13-referral-settings'],
      ['Connected apps', '14-apps'],
      ['Overview', '15-overview-after'],
    ] as const) {
      await page.getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { level: 1 }).waitFor();
      await seen(page, file);
    }
    await page.goto(`${base()}/admin/points-products/new`);
    await seen(page, '16-points-product-new');
    await page.goto(`${base()}/admin/earning-rules/new`);
    await seen(page, '17-earning-rule-new');
    expect(cspViolations).toEqual([]);
    await page.close();
  }, 90_000);

  it('fits a phone’s width without sideways scrolling', async () => {
    const phone = await (browser as Browser).newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
    await phone.addCookies(await context.cookies());
    const page = await phone.newPage();
    for (const path of ['/admin/overview', '/admin/customers', '/admin/earning-rules/new', '/admin/api-keys']) {
      await page.goto(`${base()}${path}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, path).toBeLessThanOrEqual(0);
    }
    await page.goto(`${base()}/admin/overview`);
    await page.screenshot({ path: join(ARTIFACTS, 'phone-overview.png'), fullPage: true });
    await phone.close();
  }, 60_000);

  it('has no serious or critical axe-core violation on any page', async () => {
    // axe is injected as a script, which the console's CSP forbids: this context alone bypasses it.
    const audit = await (browser as Browser).newContext({ bypassCSP: true, viewport: { width: 1100, height: 900 } });
    await audit.addCookies(await context.cookies());
    const page = await audit.newPage();
    // Every section, the pages the merchant saw (a customer, a confirmation…), and the sign-in
    // page last, without the session.
    const sections = SECTIONS.map((section) => section.href as string);
    const extra = ['/admin/earning-rules/new', '/admin/points-products/new', '/admin/nothing-here'];
    const seenPaths = [...visited].filter((path) => path !== '/admin/sign-in');
    const paths = [...new Set([...sections, ...extra, ...seenPaths]), '/admin/sign-in'];
    const failures: string[] = [];
    for (const path of paths) {
      if (path === '/admin/sign-in') await audit.clearCookies();
      await page.goto(`${base()}${path}`);
      // Signed in: the page itself, not the sign-in page it would redirect to.
      expect(new URL(page.url()).pathname).toBe(path);
      await page.addScriptTag({ content: AXE_SOURCE });
      const violations = (await page.evaluate(async () => {
        const axe = (window as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe;
        return (await axe.run()).violations;
      })) as AxeViolation[];
      for (const violation of violations) {
        if (violation.impact === 'serious' || violation.impact === 'critical') {
          failures.push(
            `${path}: ${violation.id} (${violation.impact}) ${violation.help} at ${violation.nodes.map((n) => n.target.join(' ')).join(', ')}`,
          );
        }
      }
    }
    expect(failures).toEqual([]);
    await audit.close();
  }, 90_000);
});
