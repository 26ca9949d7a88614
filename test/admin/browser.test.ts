/// <reference lib="dom" />
// The functions passed to page.evaluate run in the browser.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECTIONS } from '../../src/admin/views.js';
import { createTestDatabaseUrl, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import {
  axeFailures,
  brokenWords,
  launchChromium,
  overflowAt375,
  chromiumRunnable as runnable,
  signIn,
} from '../helpers/browser.js';
import { withServices } from '../helpers/seed.js';
import { ROOT, type ServerProcess, startServer } from '../helpers/server-process.js';

const ARTIFACTS = join(ROOT, 'test-artifacts', 'console', testEngine);
const EMAIL = 'owner@console-shop.example';
const PASSWORD = 'a long console password';

/** The one account the test made (its users sign in to it). */
function accountIdOf(accounts: Array<{ id: number; name: string }>): number {
  const account = accounts.find((candidate) => candidate.name === 'Console Shop');
  if (!account) throw new Error('no Console Shop account');
  return account.id;
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
    browser = await launchChromium();
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
    await signIn(page, EMAIL, PASSWORD);
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
    await page.getByLabel('Points each time', { exact: true }).fill('50');
    await page.getByRole('button', { name: 'Save earning rule' }).click();
    await page.getByText('The form has 1 error: nothing was saved.').waitFor();
    expect(await page.getByLabel('Points each time', { exact: true }).inputValue()).toBe('50');
    await seen(page, '04-earning-rule-refused');
    await page.getByLabel('Image URL').fill('https://cdn.example.com/order.png');
    await page.getByRole('button', { name: 'Save earning rule' }).click();
    await page.waitForURL('**/admin/earning-rules?notice=created');
    await expect(page.getByRole('cell', { name: 'Place an order' }).count()).resolves.toBe(1);
    await seen(page, '05-earning-rules');

    // An API key with the scopes it needs, copied from the page that shows it once.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Web shop');
    for (const scope of ['activity:write', 'customer:read', 'earning_rule:read']) {
      await page.locator(`input[name="scopes"][value="${scope}"]`).check();
    }
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

  it('fits a phone’s width on every page, with long emails, long names and several rules', async () => {
    // Data that is hard to fit: long names everywhere, several rules of every kind.
    const ids = await withServices(database.url, async (services) => {
      const accountId = accountIdOf(await services.accounts.list());
      await services.pointsSettings.set(accountId, { points_label: { one: 'Loyalty Coin', other: 'Loyalty Coins' } });
      const review = await services.activityTypes.create(accountId, {
        name: 'Write a product review with photos of the delivered parcel attached',
      });
      const rules = [];
      for (const [i, extra] of [
        { reward_value: { type: 'fixed', fixed: { value: 1_000_000 } } },
        {
          reward_value: { type: 'variable', variable: { value: 12.5, per_amount: 100 } },
          earning_limit: { type: 'rolling', max: 25, rolling: { unit: 'month', unit_count: 12 } },
        },
        {
          reward_value: { type: 'fixed', fixed: { value: 5 } },
          earning_limit: { type: 'lifetime', max: 3 },
          enabled: false,
        },
      ].entries()) {
        rules.push(
          await services.earningRules.create(accountId, {
            name: `Rule ${i}: review a product you bought with a long descriptive title and photos`,
            image_url: 'https://cdn.example.com/rules/a-rather-long-path/to/the-image-of-the-rule.png',
            action_text: 'Write a review of what you bought from us last month',
            action_url: 'https://shop.example.com/account/orders/reviews/new?utm_source=loyalty-widget',
            reward: { type: 'points' },
            activity_token: review.token,
            ...extra,
          }),
        );
      }
      const tier = await services.vipTiers.create(accountId, {
        name: 'Platinum Ambassadors of the Extraordinarily Loyal Customers Club',
        milestone: 1_000_000,
        perks: [{ name: 'Free express shipping on every order, worldwide, forever and ever' }],
      });
      const product = (await services.pointsProducts.create(accountId, {
        exchange_type: 'variable',
        variable_points_step: 100,
        variable_points_step_reward_value: 1,
        variable_points_min: 100,
        variable_points_max: 100_000,
        reward: { name: 'A discount on your next order, one dollar for every hundred coins spent', description: 'x' },
      })) as { id: number };
      await services.referralSettings.set(accountId, {
        status: 'active',
        sender_reward: {
          name: 'A five dollar coupon for the customer who referred a friend',
          image: { url: 'https://cdn.example.com/s.png', content_type: 'image/png' },
        },
        receiver_reward: {
          name: 'Ten percent off the first order of the friend who joined',
          image: { url: 'https://cdn.example.com/r.png', content_type: null },
        },
      });
      const customer = await services.customers.create(accountId, {
        email: 'alexandria.konstantinopoulou-vanderbilt.the.third@subdomain.example-shop.com',
        first_name: 'Alexandria Konstantinopoulou',
        last_name: 'Vanderbilt-Montgomery',
      });
      await services.pointsTransactions.adjust(accountId, {
        customer_id: customer.id,
        points_change: 123_456_789,
        description: 'Goodwill for a parcel that arrived three weeks late and damaged',
        internal_note: 'Ticket 123456789: escalated by the head of customer support',
      });
      const bought = await services.pointsProducts.purchase(accountId, product.id, {
        customer_id: customer.id,
        points_to_spend: 100,
      });
      return {
        rule: (rules[0] as { id: number }).id,
        tier: tier.id,
        product: product.id,
        customer: customer.id,
        reward: bought.reward_fulfillment.id,
      };
    });
    const phone = await (browser as Browser).newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
    await phone.addCookies(await context.cookies());
    const page = await phone.newPage();
    // A key's revocation page, when a key is listed with one.
    await page.goto(`${base()}/admin/api-keys`);
    const keyId = /\/admin\/api-keys\/(\d+)\/revoke/.exec(await page.content())?.[1];
    const pages = [
      '/admin/overview',
      '/admin/customers',
      `/admin/customers/${ids.customer}`,
      '/admin/referrals',
      '/admin/rewards',
      `/admin/rewards/${ids.reward}/cancel`,
      '/admin/earning-rules',
      '/admin/earning-rules/new',
      `/admin/earning-rules/${ids.rule}`,
      `/admin/earning-rules/${ids.rule}/delete`,
      '/admin/activity-types',
      '/admin/vip-tiers',
      `/admin/vip-tiers/${ids.tier}`,
      `/admin/vip-tiers/${ids.tier}/delete`,
      '/admin/points-products',
      '/admin/points-products/new',
      `/admin/points-products/${ids.product}`,
      `/admin/points-products/${ids.product}/delete`,
      '/admin/points-settings',
      '/admin/referral-settings',
      '/admin/referral-settings/delete',
      '/admin/api-keys',
      ...(keyId ? [`/admin/api-keys/${keyId}/revoke`, `/admin/api-keys/${keyId}/created`] : []),
      '/admin/apps',
      '/admin/webhooks',
      '/admin/imports',
      '/admin/nothing-here',
    ];
    // Every console page is walked: the sections, and each page a section leads to.
    for (const section of SECTIONS) expect(pages).toContain(section.href);
    const failures: string[] = [];
    const check = async (label: string) => {
      failures.push(...(await overflowAt375(page)).map((problem) => `${label}: ${problem}`));
      // The header leaves the phone's screen to the page (issue 49: the navigation took 285 px).
      const header = await page.evaluate(
        () => document.querySelector('header.top')?.getBoundingClientRect().height ?? 0,
      );
      if (header > 120) failures.push(`${label}: the header is ${Math.round(header)} px tall`);
      failures.push(...(await brokenWords(page)).map((problem) => `${label}: ${problem}`));
      await page.screenshot({
        path: join(ARTIFACTS, `phone-${label.replace(/[^a-z0-9]+/gi, '-')}.png`),
        fullPage: true,
      });
    };
    for (const path of pages) {
      await page.goto(`${base()}${path}`);
      expect(new URL(page.url()).pathname, path).toBe(path);
      await check(path);
    }
    // On a laptop's screen too, no word is broken (issue 49: "NAM E", "Re vok e" at 1280 px).
    const laptop = await (browser as Browser).newContext({ viewport: { width: 1280, height: 800 } });
    await laptop.addCookies(await context.cookies());
    const wide = await laptop.newPage();
    for (const path of pages) {
      await wide.goto(`${base()}${path}`);
      failures.push(...(await brokenWords(wide)).map((problem) => `${path} at 1280 px: ${problem}`));
    }
    await laptop.close();
    // Pages in other states: a refused form with its summary, the variable kinds' fields shown.
    await page.goto(`${base()}/admin/earning-rules/new`);
    await page.getByLabel('Variable: points per amount spent (such as 5 per $1)').check();
    await page.getByLabel('At most a number of times per period').check();
    await page.getByRole('button', { name: 'Save earning rule' }).click();
    await page.getByText(/The form has \d+ errors?: nothing was saved\./).waitFor();
    await check('earning-rule-refused');
    // Signed out: the sign-in page, and the one a form sent after the session ended shows.
    await phone.clearCookies();
    await page.goto(`${base()}/admin/sign-in`);
    await check('/admin/sign-in');
    expect(failures).toEqual([]);
    await phone.close();
  }, 120_000);

  it('shows only the chosen kind’s fields in the earning-rule form, without script', async () => {
    const page = await openPage();
    await page.goto(`${base()}/admin/earning-rules/new`);
    const visible = (label: string) => page.getByLabel(label, { exact: true }).isVisible();
    expect(await visible('Points each time')).toBe(true);
    expect(await visible('Per amount')).toBe(false);
    expect(await visible('Most times')).toBe(false);
    await page.getByLabel('Variable: points per amount spent (such as 5 per $1)').check();
    expect(await visible('Points each time')).toBe(false);
    expect(await visible('Per amount')).toBe(true);
    await page.getByLabel('At most a number of times, ever').check();
    expect(await visible('Most times')).toBe(true);
    expect(await visible('Period length')).toBe(false);
    await page.getByLabel('At most a number of times per period').check();
    expect(await visible('Period length')).toBe(true);
    await page.goto(`${base()}/admin/points-products/new`);
    expect(await visible('Price in points')).toBe(true);
    expect(await visible('Points per step')).toBe(false);
    expect(cspViolations).toEqual([]);
    await page.close();
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
      failures.push(...(await axeFailures(page, path)));
    }
    expect(failures).toEqual([]);
    await audit.close();
  }, 90_000);
});
