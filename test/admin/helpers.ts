import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { Browser, hiddenField } from '../oauth/helpers.js';

export const PASSWORD = 'a console password';

/** An account with a merchant user who can sign in to the console. */
export interface Merchant {
  accountId: number;
  email: string;
}

export async function createMerchant(t: TestApp, name = 'Console Shop'): Promise<Merchant> {
  const account = await t.services.accounts.create(name);
  const email = `staff-${randomBytes(4).toString('hex')}@shop.example`;
  await t.services.users.create(account.id, { email, password: PASSWORD });
  return { accountId: account.id, email };
}

/** A browser signed in to the console as `merchant`. */
export async function signedIn(t: TestApp, merchant: Merchant, password = PASSWORD): Promise<ConsoleBrowser> {
  const browser = new ConsoleBrowser(t);
  const page = await browser.get('/admin/sign-in');
  expect(page.statusCode, page.body).toBe(200);
  const done = await browser.post('/admin/sign-in', {
    csrf_token: csrfOf(page.body),
    email: merchant.email,
    password,
  });
  expect(done.statusCode, done.body).toBe(303);
  return browser;
}

/** The CSRF token of a page's first form. */
export function csrfOf(page: string): string {
  const token = hiddenField(page, 'csrf_token');
  expect(token, page).toBeTruthy();
  return token as string;
}

/**
 * The hand-made browser of the OAuth tests, with the console's forms: `submit` reads the CSRF
 * token from a page of the session first, as a form on that page would carry it.
 */
export class ConsoleBrowser extends Browser {
  constructor(readonly t: TestApp) {
    super(t.app);
  }

  async csrf(): Promise<string> {
    return csrfOf((await this.get('/admin/overview')).body);
  }

  /** Posts a form with repeated fields (checkboxes) allowed, and the session's CSRF token. */
  async submit(url: string, fields: Record<string, string | string[]> = {}): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams({ csrf_token: await this.csrf() });
    for (const [name, value] of Object.entries(fields)) {
      for (const one of Array.isArray(value) ? value : [value]) body.append(name, one);
    }
    return this.postRaw(url, body.toString());
  }

  /** Posts an already encoded form body. */
  async postRaw(url: string, body: string): Promise<LightMyRequestResponse> {
    const cookie = [...this.cookies]
      .filter(([, c]) => url.startsWith(c.path))
      .map(([name, c]) => `${name}=${c.value}`)
      .join('; ');
    const response = await this.t.app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: body,
    });
    return response;
  }
}

/** The text of the field error shown next to `name`, or undefined. */
export function fieldError(page: string, name: string): string | undefined {
  const id = `f-${name.replace(/[^A-Za-z0-9_-]/g, '-')}-error`;
  const match = new RegExp(`id="${id}"><span class="visually-hidden">Error: </span>([^<]*)<`).exec(page);
  return match?.[1];
}

/** The value a form's text field shows (the field made by partials/field.eta). */
export function fieldValue(page: string, name: string): string | undefined {
  const id = `f-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  const match = new RegExp(`id="${id}" name="${name.replace(/\./g, '\\.')}" type="[a-z]+" value="([^"]*)"`).exec(page);
  return match?.[1];
}
