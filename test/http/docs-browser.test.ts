/// <reference lib="dom" />
// The functions passed to page.evaluate run in the browser.
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/app.js';
import { axeFailures, brokenWords, chromiumRunnable, overflowAt375, serverAndBrowser } from '../helpers/browser.js';
import { ROOT } from '../helpers/server-process.js';

// Issue 49, point 14: the API reference at /docs is as accessible as the console and carries the
// service's name. Swagger UI draws most of the page in the browser, so each check runs on the page
// as loaded, again with an operation and a schema open, and again with the operation tried.

const ARTIFACTS = join(ROOT, 'test-artifacts', 'docs', testEngine);
const PHONE = { viewport: { width: 375, height: 740 }, isMobile: true };
const DESKTOP = { viewport: { width: 1280, height: 900 } };

/** Fastify's logo, which @fastify/swagger-ui puts in its top bar unless told otherwise. */
const FASTIFY_LOGO = readFileSync(
  join(createRequire(import.meta.url).resolve('@fastify/swagger-ui'), '..', 'static', 'logo.svg'),
).toString('base64');

describe.runIf(chromiumRunnable)(`the API reference (/docs) in a real browser (Chromium, ${testEngine})`, () => {
  const { base, browser } = serverAndBrowser();
  beforeAll(() => mkdirSync(ARTIFACTS, { recursive: true }));

  /** /docs in a new page of `context`, once Swagger UI has drawn the operations. */
  async function openDocs(context: BrowserContext): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${base()}/docs`);
    await page.locator('.opblock').first().waitFor();
    return page;
  }

  /** Opens the first operation and the first schema of the Schemas section, as a reader would. */
  async function openOperationAndSchema(page: Page): Promise<void> {
    await page.locator('.opblock-summary-control').first().click();
    await page.locator('.opblock-body').first().waitFor();
    const schema = page.locator('section.models .json-schema-2020-12-accordion').first();
    await schema.scrollIntoViewIfNeeded();
    await schema.click();
    await page.locator('section.models .json-schema-2020-12-body:not(.json-schema-2020-12-body--collapsed)').waitFor();
  }

  /** Tries the operation open (Try it out, Execute: a 401 without a credential) and opens the Authorize dialog. */
  async function tryOperation(page: Page): Promise<void> {
    await page.getByRole('button', { name: 'Try it out' }).click();
    await page.getByRole('button', { name: 'Execute' }).click();
    await page.locator('.live-responses-table').waitFor();
    await page.locator('.auth-wrapper .authorize').click();
    await page.locator('.modal-ux').waitFor();
  }

  it("is titled with the service's name, shows no Fastify logo and asks nothing of another host", async () => {
    const context = await browser().newContext(DESKTOP);
    const elsewhere: string[] = [];
    const problems: string[] = [];
    context.on('request', (request) => {
      const url = new URL(request.url());
      if (url.protocol !== 'data:' && url.origin !== base()) elsewhere.push(request.url());
    });
    context.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    const page = await openDocs(context);
    page.on('pageerror', (error) => problems.push(error.message));
    await openOperationAndSchema(page);
    await page.screenshot({ path: join(ARTIFACTS, 'docs-1280.png'), fullPage: false });

    expect(await page.title()).toMatch(/Loyalty API/);
    expect(await page.title()).not.toMatch(/Swagger/);
    await expect(page.getByRole('heading', { name: /Loyalty API/ }).count()).resolves.toBeGreaterThan(0);
    // No image or icon is @fastify/swagger-ui's: Fastify's logo in the top bar, Fastify's favicons.
    const images = await page.evaluate(() => [
      ...Array.from(document.images, (image) => image.src),
      ...Array.from(document.querySelectorAll<HTMLLinkElement>('link[rel~="icon"]'), (link) => link.href),
    ]);
    expect(images.filter((src) => src.includes(FASTIFY_LOGO) || /favicon-\d+x\d+\.png$/.test(src))).toEqual([]);
    expect(elsewhere).toEqual([]);
    // Everything the page needs runs under its CSP, which the browser reports as errors otherwise.
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('has no serious or critical axe-core violation, as loaded, with an operation open and tried, at 1280 and 375 px', async () => {
    const failures: string[] = [];
    for (const [name, size] of [
      ['1280 px', DESKTOP],
      ['375 px', PHONE],
    ] as const) {
      // axe is injected as a script, which the page's CSP forbids: this context alone bypasses it.
      const audit = await browser().newContext({ ...size, bypassCSP: true });
      const page = await openDocs(audit);
      failures.push(...(await axeFailures(page, `${name}, as loaded`)));
      await openOperationAndSchema(page);
      failures.push(...(await axeFailures(page, `${name}, an operation and a schema open`)));
      await tryOperation(page);
      failures.push(...(await axeFailures(page, `${name}, the operation tried and the Authorize dialog open`)));
      await audit.close();
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it("shows where the keyboard is with the console's ring, on operations and schemas alike", async () => {
    const context = await browser().newContext(DESKTOP);
    const page = await openDocs(context);
    // The keyboard is in use: focus moved by script then shows (:focus-visible) as the keyboard's.
    await page.keyboard.press('Tab');
    const rings: string[] = [];
    for (const control of [
      page.locator('.opblock-summary-control').first(),
      page.locator('section.models .json-schema-2020-12-accordion').first(),
    ]) {
      await control.focus();
      rings.push(
        await control.evaluate(
          (element) => `${getComputedStyle(element).outlineStyle} ${getComputedStyle(element).outlineColor}`,
        ),
      );
    }
    expect(rings).toEqual(['solid rgb(180, 83, 9)', 'solid rgb(180, 83, 9)']);
    await context.close();
  }, 60_000);

  it('fits a 375 px phone, as loaded, with an operation open and tried', async () => {
    const phone = await browser().newContext(PHONE);
    const page = await openDocs(phone);
    // Laid out for the phone's width, not shrunk from a desktop's 980 px.
    expect(await page.evaluate(() => document.documentElement.clientWidth)).toBe(375);
    const problems: string[] = [];
    const check = async (state: string) => {
      problems.push(...(await overflowAt375(page)).map((problem) => `${state}: ${problem}`));
      problems.push(...(await brokenWords(page)).map((problem) => `${state}: ${problem}`));
    };
    await check('as loaded');
    await openOperationAndSchema(page);
    await page.screenshot({ path: join(ARTIFACTS, 'docs-phone.png'), fullPage: false });
    await check('an operation and a schema open');
    await tryOperation(page);
    await check('the operation tried');
    expect(problems).toEqual([]);
    await phone.close();
  }, 60_000);
});
