/// <reference lib="dom" />
// The functions passed to page.evaluate run in the browser.
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PARKED_AT } from '../../src/jobs/repository.js';
import { openDb } from '../../src/storage/db.js';
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
import { eventually } from '../helpers/wait.js';

// Issue 29, "the console in Chromium": a merchant adds an endpoint pointing at a receiver running
// in this test, copies the secret shown once, sends a test event, sees it arrive signed (checked
// with the `standardwebhooks` package and the copied secret, never the service's own code), sees
// the attempt in the delivery log and resends it. The real server process makes the deliveries
// with its own job runner, as in production.

const ARTIFACTS = join(ROOT, 'test-artifacts', 'console', testEngine);
const EMAIL = 'owner@webhooks-shop.example';
const PASSWORD = 'a long console password';
/** How long a delivery may take to show: the contract's 1 s at p99, with room for a loaded machine. */
const DELIVERY_WAIT_MS = 15_000;

/** One request the receiver got, as it arrived. */
interface Arrival {
  headers: Record<string, string>;
  body: string;
}

/** A receiver as an integrator would run one: records each request and answers 200 at once. */
async function startReceiver(): Promise<{ url: string; arrivals: Arrival[]; close(): Promise<void> }> {
  const arrivals: Arrival[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (typeof value === 'string') headers[name] = value;
      }
      arrivals.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/loyalty-hooks`,
    arrivals,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.runIf(runnable)(`the console's webhooks in a real browser (Chromium, server process, ${testEngine})`, () => {
  let database: TestDatabaseUrl;
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  let context: BrowserContext;
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  const cspViolations: string[] = [];
  /** The endpoint the first test made, for the later ones. */
  let endpointPath = '';

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    await withServices(database.url, async (services) => {
      const account = await services.accounts.create('Webhooks Shop');
      await services.users.create(account.id, { email: EMAIL, password: PASSWORD });
    });
    receiver = await startReceiver();
    // The receiver is on 127.0.0.1 over http://: allowed for tests and private deployments only.
    server = await startServer({
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
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
    await receiver?.close();
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

  /** Reloads the page until the delivery log has `count` rows for `eventId` (bounded). */
  async function logRows(page: Page, eventId: string, count: number): Promise<number> {
    let rows = 0;
    await eventually(async () => {
      await page.reload();
      rows = await page.locator('#delivery-log tbody tr', { hasText: eventId }).count();
      return rows >= count;
    }, DELIVERY_WAIT_MS);
    return rows;
  }

  /**
   * Writes 30 attempts of the account's first event to `endpointId` (the newest failed, its retry
   * due in an hour; the oldest failed, its retries run out; resends between) and one to
   * `disabledId` whose retry waits, parked, for the endpoint to be enabled again.
   */
  async function fillDeliveryLog(endpointId: number, disabledId: number): Promise<void> {
    const db = openDb(database.url, { poolMax: 1 });
    try {
      const event = await db.kysely
        .selectFrom('events')
        .select(['id', 'account_id'])
        .orderBy('id')
        .executeTakeFirstOrThrow();
      const now = Date.now();
      const job = (id: number, runAt: number) =>
        db.kysely
          .insertInto('jobs')
          .values({
            queue: 'webhook_delivery',
            account_id: event.account_id,
            group_key: `webhook_endpoint:${id}`,
            subject_id: event.id,
            payload: JSON.stringify({ webhook_endpoint_id: id }),
            unique_key: null,
            run_at: runAt,
            attempts: 1,
            lease_owner: null,
            created_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
      const attempt = (id: number, n: number, fields: Record<string, unknown> = {}) => ({
        account_id: event.account_id,
        webhook_endpoint_id: id,
        event_id: event.id,
        attempt: 1,
        status_code: 200,
        error: null,
        duration_ms: 25,
        response_body: 'ok',
        created_at: now - 60_000 + n,
        delivery_id: null,
        ends_delivery: 1,
        trigger: 'resend' as const,
        ...fields,
      });
      const due = await job(endpointId, now + 3_600_000);
      const parked = await job(disabledId, PARKED_AT);
      await db.kysely
        .insertInto('webhook_attempts')
        .values([
          attempt(endpointId, 0, { attempt: 8, status_code: null, error: 'connection refused', trigger: 'event' }),
          ...Array.from({ length: 28 }, (_, n) => attempt(endpointId, n + 1)),
          attempt(endpointId, 29, { status_code: 503, ends_delivery: 0, delivery_id: due.id, trigger: 'event' }),
          attempt(disabledId, 0, { status_code: 500, ends_delivery: 0, delivery_id: parked.id, trigger: 'event' }),
        ])
        .execute();
    } finally {
      await db.close();
    }
  }

  it('adds an endpoint, copies its secret once, sends a test event that arrives signed, and resends it', async () => {
    const hooks = receiver!;
    const page = await openPage();
    await signInToConsole(page, base(), EMAIL, PASSWORD);
    await expect(page.locator('#webhook-endpoints').textContent()).resolves.toMatch(/^0 webhook endpoints/);

    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    await page.getByLabel('Endpoint URL').fill(hooks.url);
    await page.getByLabel('All events, including types added later').check();
    await page.getByLabel('Description').fill('Checkout discount codes');
    await page.screenshot({ path: join(ARTIFACTS, 'webhooks-01-new.png'), fullPage: true });
    await page.getByRole('button', { name: 'Add endpoint' }).click();

    // The secret, shown once: copied with the button, read back from the clipboard.
    await page.waitForURL(/\/admin\/webhooks\/\d+\/secret$/);
    const secretUrl = page.url();
    endpointPath = new URL(secretUrl).pathname.replace(/\/secret$/, '');
    const field = page.getByLabel(/^Signing secret of/);
    const shown = await field.inputValue();
    expect(shown).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied.').waitFor();
    const secret = await page.evaluate(() => navigator.clipboard.readText());
    expect(secret).toBe(shown);
    await page.screenshot({ path: join(ARTIFACTS, 'webhooks-02-secret.png'), fullPage: true });

    // Never again: a reload says so, and the page holds no secret.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Signing secret shown already' }).waitFor();
    expect(await page.content()).not.toContain('whsec_');
    await page.getByRole('link', { name: 'Back to the endpoint' }).click();
    await page.waitForURL(`**${endpointPath}`);
    await expect(page.locator('#status').textContent()).resolves.toBe('Enabled');
    await expect(page.getByText('No delivery attempts yet.').count()).resolves.toBe(1);

    // A test event: it arrives at the receiver, signed with the copied secret.
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText('Test event sent').waitFor();
    expect(await eventually(async () => hooks.arrivals.length >= 1, DELIVERY_WAIT_MS)).toBe(true);
    const first = hooks.arrivals[0] as Arrival;
    const verifier = new Webhook(secret);
    const event = verifier.verify(first.body, first.headers) as { id: string; type: string };
    expect(event.type).toBe('ping');
    expect(first.headers['webhook-id']).toBe(event.id);
    expect(first.headers['content-type']).toMatch(/^application\/json/);
    // The signature covers the body: a changed one is refused.
    expect(() => verifier.verify(first.body.replace('ping', 'pong'), first.headers)).toThrow();
    // …and only this secret signs it.
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(first.body, first.headers),
    ).toThrow();

    // The attempt in the delivery log, newest first.
    expect(await logRows(page, event.id, 1)).toBe(1);
    const row = page.locator('#delivery-log tbody tr', { hasText: event.id }).first();
    await expect(row.textContent()).resolves.toContain('ping');
    await expect(row.textContent()).resolves.toContain('Delivered');
    await expect(row.textContent()).resolves.toContain('200');
    await page.screenshot({ path: join(ARTIFACTS, 'webhooks-03-log.png'), fullPage: true });

    // Resend: a second delivery of the same event (same webhook-id), signed again.
    await row.getByRole('button', { name: /^Resend/ }).click();
    await page.getByText('Event queued to be sent again').waitFor();
    expect(await eventually(async () => hooks.arrivals.length >= 2, DELIVERY_WAIT_MS)).toBe(true);
    const second = hooks.arrivals[1] as Arrival;
    expect(second.headers['webhook-id']).toBe(event.id);
    expect((verifier.verify(second.body, second.headers) as { id: string }).id).toBe(event.id);
    expect(await logRows(page, event.id, 2)).toBe(2);
    // The newest row is the resend's: its attempt is numbered 1 again, and says so.
    const resentRow = page.locator('#delivery-log tbody tr', { hasText: event.id }).first();
    await expect(resentRow.textContent()).resolves.toMatch(/1 \(resend\)/);
    await expect(page.locator('#delivery-log tbody tr', { hasText: '(resend)' }).count()).resolves.toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'webhooks-04-resent.png'), fullPage: true });
    expect(hooks.arrivals).toHaveLength(2);

    // The overview counts it; none disabled.
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await expect(page.locator('#webhook-endpoints').textContent()).resolves.toMatch(
      /^1 webhook endpoint \(none disabled\)$/,
    );
    expect(cspViolations).toEqual([]);
    await page.close();
  }, 120_000);

  it('fits a phone’s width, and has no serious or critical axe-core violation, on every webhooks page', async () => {
    expect(endpointPath).toMatch(/^\/admin\/webhooks\/\d+$/);
    // A disabled endpoint with a long URL, so the warnings and badges are on the pages too.
    const page = await openPage();
    await page.goto(`${base()}/admin/webhooks`);
    await page
      .getByLabel('Endpoint URL')
      .fill(`${receiver!.url}/a-rather-long-path/for-the-endpoint/that-receives-the-events?source=loyalty`);
    await page.getByLabel('points_purchase.created').check();
    await page.getByLabel('customer.vip_tier_changed').check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.waitForURL(/\/secret$/);
    const longPath = new URL(page.url()).pathname.replace(/\/secret$/, '');
    await page.goto(`${base()}${longPath}`);
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('This endpoint is disabled').waitFor();

    // A long delivery log in every state (issue 49): more than a page of attempts, resends among
    // them, one whose retry is due, one whose retries ran out; on the disabled one, a paused retry.
    await fillDeliveryLog(Number(endpointPath.split('/').at(-1)), Number(longPath.split('/').at(-1)));
    await page.goto(`${base()}${endpointPath}`);
    expect(await page.locator('#delivery-log tbody tr').count()).toBe(20);
    await expect(page.locator('#delivery-log tbody tr').first().textContent()).resolves.toMatch(/Retry due at /);
    const older = await page.getByRole('link', { name: 'Older →' }).getAttribute('href');
    expect(older).toMatch(new RegExp(`^${endpointPath}\\?cursor=`));
    await page.goto(`${base()}${older}`);
    expect(await page.locator('#delivery-log tbody tr').count()).toBeGreaterThan(0);
    await expect(page.locator('#delivery-log').textContent()).resolves.toContain('Failed: no more retries');
    await page.getByRole('link', { name: '← Newer' }).waitFor();
    await page.goto(`${base()}${longPath}`);
    await expect(page.locator('#delivery-log').textContent()).resolves.toContain('Retry paused');
    await page.close();

    const paths = [
      '/admin/overview',
      '/admin/webhooks',
      endpointPath,
      older as string,
      `${endpointPath}/secret`,
      `${endpointPath}/rotate`,
      `${endpointPath}/delete`,
      longPath,
    ];

    expect(
      await phoneProblems(browser as Browser, await context.cookies(), base(), paths, join(ARTIFACTS, 'webhooks')),
    ).toEqual([]);
    // A page of the log fits a few screens of a phone (issue 49: the page was 9,842 px tall, then
    // 15,000 with 50 attempts of about 200 px each): 20 attempts, their short cells side by side.
    const phone = await (browser as Browser).newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
    await phone.addCookies(await context.cookies());
    const small = await phone.newPage();
    await small.goto(`${base()}${endpointPath}`);
    const log = await small.evaluate(() => ({
      height: document.querySelector('#delivery-log')?.getBoundingClientRect().height ?? 0,
      rows: document.querySelectorAll('#delivery-log tbody tr').length,
    }));
    expect(log.rows).toBe(20);
    expect(log.height).toBeLessThan(20 * 180);
    await phone.close();

    // axe is injected as a script, which the console's CSP forbids: this context alone bypasses it.
    const audit = await (browser as Browser).newContext({ bypassCSP: true, viewport: { width: 1100, height: 900 } });
    await audit.addCookies(await context.cookies());
    const auditPage = await audit.newPage();
    const failures: string[] = [];
    const check = async (label: string) => failures.push(...(await axeFailures(auditPage, label)));
    for (const path of paths) {
      await auditPage.goto(`${base()}${path}`);
      const at = new URL(auditPage.url());
      expect(`${at.pathname}${at.search}`).toBe(path);
      await check(path);
    }
    // The page that shows a new secret, and a refused form with its summary.
    await auditPage.goto(`${base()}${endpointPath}/rotate`);
    await auditPage.getByRole('button', { name: 'Rotate the secret' }).click();
    await auditPage.waitForURL(/\/secret$/);
    expect(await auditPage.getByLabel(/^Signing secret of/).inputValue()).toMatch(/^whsec_/);
    await check('secret shown');
    await auditPage.goto(`${base()}/admin/webhooks`);
    await auditPage.getByLabel('Endpoint URL').fill('not a url');
    await auditPage.getByLabel('customer.created').check();
    await auditPage.getByRole('button', { name: 'Add endpoint' }).click();
    await auditPage.getByText('The form has 1 error: nothing was saved.').waitFor();
    await check('refused form');
    await audit.close();
    expect(failures).toEqual([]);
    expect(cspViolations).toEqual([]);
  }, 120_000);
});
