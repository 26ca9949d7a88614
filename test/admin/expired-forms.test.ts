import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { rowCount } from '../helpers/engine.js';
import { hiddenFields } from '../oauth/helpers.js';
import { type ConsoleBrowser, createMerchant, fieldValue, type Merchant, PASSWORD, signedIn } from './helpers.js';

// Issue 27, item 5, on the customer and API-key forms: typed values survive an expired session
// and come back after signing in, shown to send again, never applied on their own.

let t: TestApp;
let merchant: Merchant;
let browser: ConsoleBrowser;
beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t);
  browser = await signedIn(t, merchant);
});
afterEach(async () => t.close());

/** Sends `fields` to `path` after the session expired; signs in with what the page carried. */
async function lateThenSignIn(path: string, fields: Record<string, string>) {
  const csrf = await browser.csrf();
  t.clock.advance(31 * 60 * 1000);
  const late = await browser.postRaw(path, new URLSearchParams({ csrf_token: csrf, ...fields }).toString());
  expect(late.statusCode).toBe(401);
  expect(late.body).toContain('Your session expired; nothing was saved.');
  for (const cookie of late.cookies as Array<{ name: string; value: string; path?: string }>) {
    browser.cookies.set(cookie.name, { value: cookie.value, path: cookie.path ?? '/' });
  }
  const carried = hiddenFields(late.body);
  expect(carried.form_action).toBe(path);
  const shown = await browser.post('/admin/sign-in', { ...carried, email: merchant.email, password: PASSWORD });
  expect(shown.statusCode).toBe(200);
  expect(shown.body).toContain('Your session expired, so nothing was saved.');
  return shown;
}

describe('customer and key forms sent after the session expired', () => {
  it('keeps a points adjustment as typed and saves nothing until it is sent again', async () => {
    const customer = await t.services.customers.create(merchant.accountId, { email: 'ann@example.com' });
    const shown = await lateThenSignIn(`/admin/customers/${customer.id}/adjust`, {
      points_change: '25',
      description: 'Goodwill',
    });
    expect(fieldValue(shown.body, 'points_change')).toBe('25');
    expect(fieldValue(shown.body, 'description')).toBe('Goodwill');
    expect(await rowCount(t.db.kysely, 'points_transactions')).toBe(0);
  });

  it('keeps a new customer’s email as typed', async () => {
    const shown = await lateThenSignIn('/admin/customers', { email: 'bea@example.com' });
    expect(fieldValue(shown.body, 'email')).toBe('bea@example.com');
    expect(await rowCount(t.db.kysely, 'customers')).toBe(0);
  });

  it('keeps a new API key’s name, and makes no key', async () => {
    const before = await rowCount(t.db.kysely, 'api_keys');
    const shown = await lateThenSignIn('/admin/api-keys', { name: 'Storefront', scopes: 'customer:read' });
    expect(fieldValue(shown.body, 'name')).toBe('Storefront');
    expect(await rowCount(t.db.kysely, 'api_keys')).toBe(before);
  });
});
