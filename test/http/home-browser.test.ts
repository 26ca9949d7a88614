import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { chromiumRunnable, launchChromium } from '../helpers/browser.js';

// A missing browser fails in CI, and is skipped elsewhere (test/helpers/browser.ts).
describe.runIf(chromiumRunnable)('GET / in a real browser', () => {
  let t: TestApp;
  let browser: Browser;
  let origin: string;
  beforeAll(async () => {
    t = await createTestApp();
    origin = await t.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('shows the page with its stylesheet and no policy violation, fits a phone, and leads to the console', async () => {
    const page = await browser.newPage({ viewport: { width: 375, height: 700 } });
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    const answer = await page.goto(`${origin}/`);
    expect(answer?.status()).toBe(200);
    expect(await page.title()).toBe('Loyalty API');
    // The console's stylesheet applies (its own font, not the browser's serif default) under the page's CSP.
    const font = await page.evaluate(() => getComputedStyle(document.body).fontFamily);
    expect(font).not.toMatch(/^"?Times/);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    expect(problems).toEqual([]);

    await page.getByRole('link', { name: 'The console' }).click();
    await page.waitForURL(/\/admin\/sign-in/);
    await page.goBack();
    await page.getByRole('link', { name: 'The API reference' }).click();
    await page.waitForURL(/\/docs/);
    await page.close();
  }, 60_000);
});
