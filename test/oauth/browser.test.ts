import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumRunnable, launchChromium, signIn } from '../helpers/browser.js';
import { withServices } from '../helpers/seed.js';
import { ROOT, type ServerProcess, startServer } from '../helpers/server-process.js';
import { pkcePair } from './helpers.js';

const SCREENSHOT = join(ROOT, 'test-artifacts', 'oauth-consent.png');
const EMAIL = 'owner@browser-shop.example';
const PASSWORD = 'a long browser password';

describe.runIf(chromiumRunnable)('OAuth in a real browser (headless Chromium against the server process)', () => {
  let dir: string;
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  let callback: Server;
  let callbackUrl: string;
  const callbacks: URL[] = [];
  let seeded: { clientId: string; clientSecret: string; accountId: number };

  beforeAll(async () => {
    // The app's redirect URI: a tiny local server that records what the browser brings back.
    callback = createServer((request, response) => {
      callbacks.push(new URL(request.url ?? '/', callbackUrl));
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<!doctype html><title>Connected</title><h1>Connected</h1>');
    });
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;

    dir = mkdtempSync(join(tmpdir(), 'loyalty-oauth-browser-'));
    const url = `sqlite:${join(dir, 'browser.db')}`;
    seeded = await withServices(url, async (services) => {
      const account = await services.accounts.create('Browser Shop');
      await services.users.create(account.id, { email: EMAIL, password: PASSWORD });
      const app = await services.apps.create({
        name: 'Reviews <Pro> & Co',
        scopes: ['customer_identity:write', 'earning_rule:read'],
        redirectUris: [callbackUrl],
      });
      return { clientId: app.client_id, clientSecret: app.client_secret as string, accountId: account.id };
    });
    // LOG_LEVEL info: startServer waits for the "Server listening" line.
    server = await startServer({ DATABASE_URL: url, LOG_LEVEL: 'info' });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop('SIGKILL');
    await new Promise((resolve) => callback?.close(resolve));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('signs in, shows the consent page, approves, and the app exchanges the code and calls the API', async () => {
    const base = (server as ServerProcess).url;
    const { verifier, challenge } = pkcePair();
    const authorize = new URL('/oauth2/authorize', base);
    authorize.search = new URLSearchParams({
      client_id: seeded.clientId,
      response_type: 'code',
      redirect_uri: callbackUrl,
      scope: 'customer_identity:write earning_rule:read',
      state: 'browser-state-42',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }).toString();

    const page = await (browser as Browser).newPage({ viewport: { width: 640, height: 720 } });
    await page.goto(authorize.toString());
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      'Sign in to connect Reviews <Pro> & Co',
    );
    await signIn(page, EMAIL, PASSWORD);

    await page.getByRole('button', { name: 'Approve' }).waitFor();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      'Allow Reviews <Pro> & Co to access your loyalty program?',
    );
    const items = await page.getByRole('listitem').allTextContents();
    expect(items.join('\n')).toContain('Create and update customer identities');
    expect(items.join('\n')).toContain('Read your earning rules');
    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // The redirect after the form must pass the page's CSP (form-action includes the app).
    await Promise.all([
      page.waitForURL((url) => url.toString().startsWith(callbackUrl)),
      page.getByRole('button', { name: 'Approve' }).click(),
    ]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get('state')).toBe('browser-state-42');
    const code = landed.searchParams.get('code') as string;
    expect(code).toMatch(/^oac_/);
    expect(callbacks.map((u) => u.searchParams.get('code'))).toContain(code);
    await page.close();

    const token = await fetch(`${base}/oauth2/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${seeded.clientId}:${seeded.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: callbackUrl,
        code_verifier: verifier,
      }),
    });
    expect(token.status).toBe(200);
    const tokens = (await token.json()) as { access_token: string; scope: string };
    expect(tokens.scope).toBe('earning_rule:read customer_identity:write');

    const call = await fetch(`${base}/v1/customer_identities/create_or_update`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ customer_identity: { distinct_id: 'browser-1', email: 'buyer@browser.example' } }),
    });
    expect(call.status).toBe(201);
  }, 60_000);
});
