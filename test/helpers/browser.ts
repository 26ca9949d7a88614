/// <reference lib="dom" />
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabaseUrl, type TestDatabaseUrl } from './app.js';
import { type ServerProcess, startServer } from './server-process.js';

// What the browser tests share: the Chromium they launch, the sign-in form they fill, and what
// the console's tests check on every page they open (that it fits a phone, and that axe-core
// finds nothing serious).

/** Debian's Chromium, the one browser the tests drive. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Whether the browser tests run. In CI a missing browser is a failure (chromium.launch throws);
 * on a workstation without it they are skipped, and say so.
 */
export const chromiumRunnable = existsSync(CHROMIUM) || Boolean(process.env.CI);
if (!chromiumRunnable) {
  console.warn(`[browser tests] skipped: ${CHROMIUM} does not exist (install Debian's chromium to run it).`);
}

/** Headless Chromium, without sandbox or GPU, kept off the network but for the pages it opens. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * For a describe block: a test database of its own, a server process on it (started with `env`,
 * after `seed` filled the database) and Chromium, made before its tests and closed after them.
 */
export function serverAndBrowser(
  options: { env?: Record<string, string>; seed?: (databaseUrl: string) => Promise<void> } = {},
): { base(): string; browser(): Browser } {
  let database: TestDatabaseUrl | undefined;
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    await options.seed?.(database.url);
    server = await startServer({ DATABASE_URL: database.url, ...options.env });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop('SIGKILL');
    await database?.drop();
  });
  return { base: () => (server as ServerProcess).url, browser: () => browser as Browser };
}

/** Fills the sign-in form `page` shows (the console's or OAuth's) and submits it. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Signs in to the console at `base` from its sign-in page, and waits for the overview. */
export async function signInToConsole(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/admin/sign-in`);
  await signIn(page, email, password);
  await page.waitForURL('**/admin/overview');
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/**
 * What does not fit a 375 px wide screen: the page scrolling sideways, or an element ending past
 * the right edge outside a box that scrolls on purpose (overflow-x auto or scroll).
 */
export async function overflowAt375(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > width) {
      problems.push(`the page is ${document.documentElement.scrollWidth - width} px wider than the screen`);
    }
    // The page's own scrolling is what is looked for, not a box's: the root is never one (Swagger
    // UI's `html { overflow-y: scroll }` makes its overflow-x auto).
    const scrolls = (element: Element) =>
      element !== document.documentElement && ['auto', 'scroll'].includes(getComputedStyle(element).overflowX);
    for (const element of Array.from(document.body.querySelectorAll('*'))) {
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || box.right <= width + 0.5) continue;
      let inside = element.parentElement;
      while (inside && !scrolls(inside)) inside = inside.parentElement;
      if (inside) continue;
      const name = `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ''}${element.className && typeof element.className === 'string' ? `.${element.className.split(' ').join('.')}` : ''}`;
      problems.push(
        `${name} ends at ${Math.round(box.right)} px ("${(element.textContent ?? '').trim().slice(0, 40)}")`,
      );
    }
    return problems;
  });
}

/**
 * The words of the page's tables, buttons and navigation broken across lines ("NAM E", "Re vok e"),
 * each as a problem; emails, codes, URLs, keys and code blocks (a JSON example in a table of the
 * API reference) may break, as they must to fit.
 */
export async function brokenWords(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    for (const container of Array.from(document.body.querySelectorAll('caption, th, td, button, nav'))) {
      const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement?.closest('pre')) continue;
        const text = node.textContent ?? '';
        // A word: what a line may not break inside (a hyphen or a slash may end a line).
        for (const match of text.matchAll(/[^\s/-]+/g)) {
          // Emails, codes, URLs and keys may break, as they must to fit: long, or machine-made.
          if (match[0].length > 24 || /[?=&.:@_]/.test(match[0])) continue;
          const range = document.createRange();
          range.setStart(node, match.index ?? 0);
          range.setEnd(node, (match.index ?? 0) + match[0].length);
          const lines = new Set(Array.from(range.getClientRects(), (rect) => Math.round(rect.top)));
          if (lines.size > 1) problems.push(`"${match[0]}" is broken across ${lines.size} lines`);
        }
      }
    }
    return problems;
  });
}

/**
 * The serious and critical axe-core violations of the page as it is, each a line starting with
 * `label`. axe is injected as a script: the page's context must bypass the console's CSP.
 */
export async function axeFailures(page: Page, label: string): Promise<string[]> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const violations = (await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run()).violations;
  })) as AxeViolation[];
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${label}: ${violation.id} (${violation.impact}) ${violation.help} at ${violation.nodes.map((n) => n.target.join(' ')).join(', ')}`,
    );
}

/**
 * What does not fit a 375 px phone on each of `paths` of the console at `base`, opened signed in
 * with `cookies` (each page's screenshot saved as `<shots>-phone<path>.png`), and each page that
 * did not stay on its path (a redirect to sign-in, say).
 */
export async function phoneProblems(
  browser: Browser,
  cookies: Parameters<BrowserContext['addCookies']>[0],
  base: string,
  paths: readonly string[],
  shots: string,
): Promise<string[]> {
  const phone = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
  await phone.addCookies(cookies);
  const small = await phone.newPage();
  const problems: string[] = [];
  for (const path of paths) {
    await small.goto(`${base}${path}`);
    const at = `${new URL(small.url()).pathname}${new URL(small.url()).search}`;
    if (at !== path) problems.push(`${path}: ended at ${at}`);
    problems.push(...(await overflowAt375(small)).map((problem) => `${path}: ${problem}`));
    problems.push(...(await brokenWords(small)).map((problem) => `${path}: ${problem}`));
    await small.screenshot({ path: `${shots}-phone${path.replace(/[^a-z0-9]+/gi, '-')}.png`, fullPage: true });
  }
  await phone.close();
  return problems;
}
