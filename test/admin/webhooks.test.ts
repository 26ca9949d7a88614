import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/admin/views.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { rowCount } from '../helpers/engine.js';
import { type ConsoleBrowser, createMerchant, fieldError, type Merchant, signedIn } from './helpers.js';

// Issue 29: the console's webhooks pages. Endpoints are listed and added on one page, a new or
// rotated secret is shown once on the page the form redirects to, and each endpoint's page
// enables, disables, rotates, deletes, sends a test event and resends from its delivery log.
// No job runner runs here: deliveries are queued, never made (the browser test makes them).

let t: TestApp;
let merchant: Merchant;
beforeEach(async () => {
  t = await createTestApp();
  merchant = await createMerchant(t);
});
afterEach(async () => t.close());

const URL_A = 'https://hooks.example.com/loyalty';
const secretOnPage = (body: string) =>
  /id="new-secret" class="copy" type="text" readonly value="(whsec_[^"]+)"/.exec(body)?.[1];
const endpointRows = () => t.db.kysely.selectFrom('webhook_endpoints').selectAll().orderBy('id').execute();
const NOT_FOUND = 'There is nothing here, or it belongs to another account.';

/**
 * Keeps the cookies a form's answer sets, as a browser would: the helpers' `submit` posts
 * without reading them, and the secret waits in one.
 */
function keep(browser: ConsoleBrowser, response: LightMyRequestResponse): LightMyRequestResponse {
  for (const cookie of response.cookies as Array<{ name: string; value: string; path?: string; maxAge?: number }>) {
    if (cookie.maxAge === 0 || cookie.value === '') browser.cookies.delete(cookie.name);
    else browser.cookies.set(cookie.name, { value: cookie.value, path: cookie.path ?? '/' });
  }
  return response;
}

/** Adds an endpoint through the form; returns its id and the secret its page showed. */
async function addEndpoint(
  browser: ConsoleBrowser,
  fields: Record<string, string | string[]> = {},
): Promise<{ id: number; secret: string; location: string }> {
  const sent = keep(
    browser,
    await browser.submit('/admin/webhooks', {
      url: URL_A,
      enabled_events: ['customer.created', 'points_purchase.created'],
      description: 'Checkout codes',
      ...fields,
    }),
  );
  expect(sent.statusCode, sent.body).toBe(303);
  const location = sent.headers.location as string;
  const id = Number(/^\/admin\/webhooks\/(\d+)\/secret$/.exec(location)?.[1]);
  expect(id).toBeGreaterThan(0);
  const shown = await browser.get(location);
  expect(shown.statusCode, shown.body).toBe(200);
  const secret = secretOnPage(shown.body);
  expect(secret, shown.body).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  return { id, secret: secret as string, location };
}

describe('the webhooks page', () => {
  it('lists nothing at first, offers every event type but ping, and is in the navigation', async () => {
    const browser = await signedIn(t, merchant);
    const page = await browser.get('/admin/webhooks');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<h1>Webhooks</h1>');
    expect(page.body).toContain('No webhook endpoints yet.');
    expect(page.body).toContain('href="/admin/webhooks" aria-current="page"');
    for (const type of ['customer.created', 'points_purchase.created', 'reward_fulfillment.updated']) {
      expect(page.body).toContain(`name="enabled_events" value="${type}"`);
    }
    expect(page.body).toContain('name="enabled_events" value="*"');
    expect(page.body).not.toContain('value="ping"');
    // Another page marks its own section, and links here.
    const overview = await browser.get('/admin/overview');
    expect(overview.body).toContain('<a href="/admin/webhooks">Webhooks</a>');
  });

  it('adds an endpoint, shows its secret once on the page it redirects to, and lists it', async () => {
    const browser = await signedIn(t, merchant);
    const sent = keep(
      browser,
      await browser.submit('/admin/webhooks', {
        url: URL_A,
        enabled_events: ['customer.created', 'points_purchase.created'],
        description: 'Checkout codes',
      }),
    );
    expect(sent.statusCode, sent.body).toBe(303);
    expect(sent.body).not.toContain('whsec_');
    const location = sent.headers.location as string;
    const [row] = await endpointRows();
    expect(row).toMatchObject({ account_id: merchant.accountId, url: URL_A, status: 'enabled', grant_id: null });
    expect(location).toBe(`/admin/webhooks/${row?.id}/secret`);
    // The secret waits sealed, in a cookie sent to that page only.
    const cookie = sent.cookies.find((c) => c.name === 'loyalty_webhook_secret');
    expect(cookie).toMatchObject({ path: location, httpOnly: true, sameSite: 'Strict' });
    expect(cookie?.value).not.toContain('whsec_');

    const shown = await browser.get(location);
    expect(shown.statusCode).toBe(200);
    const secret = secretOnPage(shown.body) as string;
    expect(secret).toMatch(/^whsec_/);
    expect(shown.headers['content-security-policy']).toBe(`${CONSOLE_CSP}; script-src 'self'`);
    expect(shown.body).toContain('<script src="/admin/assets/copy.js" defer></script>');
    expect(JSON.stringify(await endpointRows())).not.toContain(secret.slice(6));

    // Once: a reload shows it no more, and makes no second endpoint.
    const reloaded = await browser.get(location);
    expect(reloaded.statusCode).toBe(200);
    expect(reloaded.body).not.toContain(secret);
    expect(reloaded.body).not.toContain('whsec_');
    expect(reloaded.body).toContain('Signing secret shown already');
    expect(reloaded.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(await rowCount(t.db.kysely, 'webhook_endpoints')).toBe(1);

    const list = await browser.get('/admin/webhooks');
    expect(list.body).toContain(`<a href="/admin/webhooks/${row?.id}">${URL_A}</a>`);
    expect(list.body).toContain('customer.created points_purchase.created');
    expect(list.body).toContain('<span class="badge on">Enabled</span>');
    expect(list.body).toContain('Checkout codes');
    expect(list.body).not.toContain('whsec_');
  });

  it('does not show a secret to another session, even with its cookie', async () => {
    const maker = await signedIn(t, merchant);
    const sent = keep(maker, await maker.submit('/admin/webhooks', { url: URL_A, enabled_events: '*' }));
    const sealed = maker.cookies.get('loyalty_webhook_secret');
    expect(sealed).toBeDefined();
    const colleague = await signedIn(t, merchant);
    colleague.cookies.set('loyalty_webhook_secret', sealed!);
    const theirs = await colleague.get(sent.headers.location as string);
    expect(theirs.statusCode).toBe(200);
    expect(secretOnPage(theirs.body)).toBeUndefined();
    expect(secretOnPage((await maker.get(sent.headers.location as string)).body)).toMatch(/^whsec_/);
  });

  it('sends all events as ["*"], whatever is ticked beside it', async () => {
    const browser = await signedIn(t, merchant);
    const { id } = await addEndpoint(browser, { enabled_events: ['*', 'customer.created'], description: '' });
    const endpoint = await t.services.webhooks.get(merchant.accountId, id);
    expect(endpoint.enabled_events).toEqual(['*']);
    expect((await browser.get('/admin/webhooks')).body).toContain('All events');
  });

  it('refuses a bad URL at its field, keeps what was typed and writes nothing', async () => {
    const browser = await signedIn(t, merchant);
    for (const url of ['http://hooks.example.com/loyalty', 'ftp://hooks.example.com', 'https://127.0.0.1/hook', '']) {
      const sent = await browser.submit('/admin/webhooks', {
        url,
        enabled_events: ['customer.created'],
        description: 'Typed',
      });
      expect(sent.statusCode, `${url}: ${sent.body}`).toBe(400);
      expect(sent.body).toContain('nothing was saved');
      expect(fieldError(sent.body, 'url'), url).toBeTruthy();
      expect(sent.body).toContain(`value="${url}"`);
      expect(sent.body).toContain('value="customer.created" checked');
      expect(sent.body).toContain('value="Typed"');
      expect(sent.cookies.find((c) => c.name === 'loyalty_webhook_secret')).toBeUndefined();
    }
    expect(await rowCount(t.db.kysely, 'webhook_endpoints')).toBe(0);
  });

  it('refuses an endpoint with no events ticked, at the events', async () => {
    const browser = await signedIn(t, merchant);
    const sent = await browser.submit('/admin/webhooks', { url: URL_A });
    expect(sent.statusCode).toBe(400);
    expect(fieldError(sent.body, 'enabled_events')).toBe('Choose the events to send, or all events.');
    expect(sent.body).toContain('href="#f-enabled_events"');
    expect(await rowCount(t.db.kysely, 'webhook_endpoints')).toBe(0);
  });

  it('refuses a form not sent from the session: nothing is made', async () => {
    const browser = await signedIn(t, merchant);
    const sent = await browser.postRaw(
      '/admin/webhooks',
      new URLSearchParams({ csrf_token: 'forged', url: URL_A, enabled_events: '*' }).toString(),
    );
    expect(sent.statusCode).toBe(403);
    expect(await rowCount(t.db.kysely, 'webhook_endpoints')).toBe(0);
  });
});

describe('an endpoint’s page', () => {
  it('shows its details, and saves changes made in its form', async () => {
    const browser = await signedIn(t, merchant);
    const { id } = await addEndpoint(browser);
    const page = await browser.get(`/admin/webhooks/${id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`<h1 class="wrap-anywhere">${URL_A}</h1>`);
    expect(page.body).toContain('Checkout codes');
    expect(page.body).toContain('No delivery attempts yet.');
    expect(page.body).toContain('value="points_purchase.created" checked');
    expect(page.body).toContain('Send test event');
    expect(page.body).not.toContain('whsec_');

    const saved = await browser.submit(`/admin/webhooks/${id}`, {
      url: 'https://crm.example.com/hooks',
      enabled_events: ['customer.vip_tier_changed'],
      description: 'CRM',
    });
    expect(saved.statusCode, saved.body).toBe(303);
    expect(saved.headers.location).toBe(`/admin/webhooks/${id}?notice=saved`);
    expect(await t.services.webhooks.get(merchant.accountId, id)).toMatchObject({
      url: 'https://crm.example.com/hooks',
      enabled_events: ['customer.vip_tier_changed'],
      description: 'CRM',
    });
    expect((await browser.get(saved.headers.location as string)).body).toContain('Saved.');

    // A bad URL is refused at its field; the endpoint keeps what it had.
    const refused = await browser.submit(`/admin/webhooks/${id}`, {
      url: 'https://user:pw@crm.example.com/hooks',
      enabled_events: ['customer.created'],
    });
    expect(refused.statusCode).toBe(400);
    expect(fieldError(refused.body, 'url')).toBeTruthy();
    expect((await t.services.webhooks.get(merchant.accountId, id)).url).toBe('https://crm.example.com/hooks');
  });

  it('disables and enables it; the list and the overview show the disabled one', async () => {
    const browser = await signedIn(t, merchant);
    const overview0 = await browser.get('/admin/overview');
    expect(overview0.body).toMatch(/<li id="webhook-endpoints"><span class="figure">0<\/span>/);
    const { id } = await addEndpoint(browser);
    await addEndpoint(browser, { url: 'https://second.example.com/hook' });

    const disabled = await browser.submit(`/admin/webhooks/${id}/disable`);
    expect(disabled.statusCode).toBe(303);
    expect(disabled.headers.location).toBe(`/admin/webhooks/${id}?notice=disabled`);
    expect((await t.services.webhooks.get(merchant.accountId, id)).status).toBe('disabled');
    const page = await browser.get(disabled.headers.location as string);
    expect(page.body).toContain('id="disabled-warning"');
    expect(page.body).toContain('>Enable</button>');
    expect((await browser.get('/admin/webhooks')).body).toContain('<span class="badge off">Disabled</span>');

    const overview = await browser.get('/admin/overview');
    expect(overview.body).toMatch(/<li id="webhook-endpoints" class="warning"><span class="figure">2<\/span>/);
    expect(overview.body).toContain('1 disabled');

    const enabled = await browser.submit(`/admin/webhooks/${id}/enable`);
    expect(enabled.headers.location).toBe(`/admin/webhooks/${id}?notice=enabled`);
    expect((await t.services.webhooks.get(merchant.accountId, id)).status).toBe('enabled');
    const after = await browser.get('/admin/overview');
    expect(after.body).toMatch(/<li id="webhook-endpoints"><span class="figure">2<\/span>/);
    expect(after.body).toContain('none disabled');
  });

  it('deletes it after asking', async () => {
    const browser = await signedIn(t, merchant);
    const { id } = await addEndpoint(browser);
    const confirm = await browser.get(`/admin/webhooks/${id}/delete`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain(`action="/admin/webhooks/${id}/delete"`);
    expect(confirm.body).toContain('Delete the endpoint');
    expect(await rowCount(t.db.kysely, 'webhook_endpoints')).toBe(1);
    const deleted = await browser.submit(`/admin/webhooks/${id}/delete`);
    expect(deleted.statusCode).toBe(303);
    expect(deleted.headers.location).toBe('/admin/webhooks?notice=deleted');
    expect(await rowCount(t.db.kysely, 'webhook_endpoints')).toBe(0);
    expect((await browser.get(`/admin/webhooks/${id}`)).statusCode).toBe(404);
  });

  it('rotates its secret after asking, and shows the new one once', async () => {
    const browser = await signedIn(t, merchant);
    const { id, secret } = await addEndpoint(browser);
    const confirm = await browser.get(`/admin/webhooks/${id}/rotate`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('24 hours');
    const rotated = keep(browser, await browser.submit(`/admin/webhooks/${id}/rotate`));
    expect(rotated.statusCode).toBe(303);
    expect(rotated.headers.location).toBe(`/admin/webhooks/${id}/secret`);
    const shown = await browser.get(rotated.headers.location as string);
    const fresh = secretOnPage(shown.body);
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(secret);
    expect(secretOnPage((await browser.get(rotated.headers.location as string)).body)).toBeUndefined();
  });

  it('sends a test event, shows the attempts of its log, and resends one', async () => {
    const browser = await signedIn(t, merchant);
    const { id } = await addEndpoint(browser);
    const queued = () =>
      t.db.kysely
        .selectFrom('jobs')
        .select(['id', 'subject_id'])
        .where('group_key', '=', `webhook_endpoint:${id}`)
        .execute();
    expect(await queued()).toHaveLength(0);

    const sent = await browser.submit(`/admin/webhooks/${id}/test`);
    expect(sent.statusCode, sent.body).toBe(303);
    expect(sent.headers.location).toBe(`/admin/webhooks/${id}?notice=test-sent`);
    expect((await browser.get(sent.headers.location as string)).body).toContain('Test event sent');
    const ping = await t.db.kysely
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', merchant.accountId)
      .where('type', '=', 'ping')
      .executeTakeFirstOrThrow();
    expect(await queued()).toHaveLength(1);

    // An attempt as the delivery code records it: the log shows it with its result and a Resend button.
    await t.db.kysely
      .insertInto('webhook_attempts')
      .values({
        account_id: merchant.accountId,
        webhook_endpoint_id: id,
        event_id: ping.id,
        attempt: 1,
        status_code: 503,
        error: null,
        duration_ms: 1234,
        response_body: 'busy',
        created_at: t.clock.now(),
      })
      .execute();
    const page = await browser.get(`/admin/webhooks/${id}`);
    const log = page.body.slice(page.body.indexOf('id="delivery-log"'));
    expect(log).toContain('<code>ping</code>');
    expect(log).toContain(`<code class="muted">${ping.public_id}</code>`);
    expect(log).toContain('503');
    expect(log).toContain('1,234 ms');
    expect(log).toContain(`name="event_id" value="${ping.public_id}"`);

    // Resending the event from the log (its job ran, so it is queued again).
    await t.db.kysely.deleteFrom('jobs').where('group_key', '=', `webhook_endpoint:${id}`).execute();
    const resent = await browser.submit(`/admin/webhooks/${id}/resend`, { event_id: ping.public_id });
    expect(resent.statusCode, resent.body).toBe(303);
    expect(resent.headers.location).toBe(`/admin/webhooks/${id}?notice=resent`);
    expect((await queued()).map((job) => job.subject_id)).toEqual([ping.id]);

    // An event id that is not the account's is the console's not-found page.
    const unknown = await browser.submit(`/admin/webhooks/${id}/resend`, { event_id: 'evt_doesnotexist0000000000' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain(NOT_FOUND);
  });
});

describe('the delivery log of an endpoint', () => {
  it('says what follows each attempt, marks resends, and pages 20 at a time, newest first', async () => {
    const browser = await signedIn(t, merchant);
    const { id } = await addEndpoint(browser);
    await browser.submit(`/admin/webhooks/${id}/test`);
    const ping = await t.db.kysely
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', merchant.accountId)
      .executeTakeFirstOrThrow();
    const now = t.clock.now();
    const row = (n: number, fields: Record<string, unknown>) => ({
      account_id: merchant.accountId,
      webhook_endpoint_id: id,
      event_id: ping.id,
      attempt: 1,
      status_code: 200,
      error: null,
      duration_ms: 10,
      response_body: 'ok',
      created_at: now - 100_000 + n,
      delivery_id: null,
      ends_delivery: 1,
      trigger: 'event' as const,
      ...fields,
    });
    // 24 older attempts (the oldest: a delivery whose retries ran out), then one whose retry is due.
    await t.db.kysely
      .insertInto('webhook_attempts')
      .values([
        row(0, { status_code: 500, ends_delivery: 1, attempt: 8 }),
        ...Array.from({ length: 22 }, (_, n) => row(n + 1, { trigger: 'resend' })),
        row(23, { status_code: 500, ends_delivery: 1, attempt: 8 }),
      ])
      .execute();
    // The test event's delivery, as the runner leaves it after a failed first attempt.
    const job = await t.db.kysely
      .selectFrom('jobs')
      .select('id')
      .where('group_key', '=', `webhook_endpoint:${id}`)
      .executeTakeFirstOrThrow();
    const dueAt = now + 5_123;
    await t.db.kysely.updateTable('jobs').set({ attempts: 1, run_at: dueAt }).where('id', '=', job.id).execute();
    await t.db.kysely
      .insertInto('webhook_attempts')
      .values(row(24, { status_code: 503, ends_delivery: 0, delivery_id: Number(job.id) }))
      .execute();

    const rowsOf = (body: string) => body.slice(body.indexOf('id="delivery-log"')).split('<tr>').slice(2);
    const first = await browser.get(`/admin/webhooks/${id}`);
    expect(first.statusCode).toBe(200);
    const rows = rowsOf(first.body);
    expect(rows).toHaveLength(20);
    const due = new Date(dueAt).toISOString().slice(0, 19).replace('T', ' ');
    expect(rows[0]).toContain(`Retry due at ${due} UTC`);
    expect(rows[0]).toContain('503');
    expect(rows[1]).toContain('Failed: no more retries');
    expect(rows[2]).toContain('Delivered');
    expect(rows[2]).toContain('(resend)');
    expect(rows[0]).not.toContain('(resend)');
    const older = /<a rel="next" href="([^"]+)">Older →<\/a>/.exec(first.body)?.[1];
    expect(older, first.body).toMatch(new RegExp(`^/admin/webhooks/${id}\\?cursor=`));
    expect(first.body).not.toContain('← Newer');

    const second = await browser.get(older!.replaceAll('&amp;', '&'));
    expect(second.statusCode).toBe(200);
    const rest = rowsOf(second.body);
    expect(rest).toHaveLength(5);
    expect(rest.at(-1)).toContain('Failed: no more retries');
    expect(second.body).not.toContain('Older →');
    const newer = /<a rel="prev" href="([^"]+)">← Newer<\/a>/.exec(second.body)?.[1];
    expect(newer).toBeDefined();
    expect(rowsOf((await browser.get(newer!)).body)).toHaveLength(20);
  });
});

describe('another account’s endpoint', () => {
  it('is not found on any of its pages, and its actions change nothing', async () => {
    const owner = await signedIn(t, merchant);
    const { id } = await addEndpoint(owner);
    const other = await signedIn(t, await createMerchant(t, 'Other Shop'));
    for (const path of ['', '/delete', '/rotate', '/secret']) {
      const page = await other.get(`/admin/webhooks/${id}${path}`);
      expect(page.statusCode, path).toBe(404);
      expect(page.body).toContain(NOT_FOUND);
      expect(page.body).not.toContain(URL_A);
    }
    for (const path of ['', '/delete', '/rotate', '/disable', '/test', '/resend']) {
      const sent = await other.submit(`/admin/webhooks/${id}${path}`, {
        url: 'https://evil.example.com',
        enabled_events: '*',
        event_id: 'evt_x',
      });
      expect(sent.statusCode, path).toBe(404);
      expect(sent.body).toContain(NOT_FOUND);
      expect(sent.body).not.toContain('whsec_');
    }
    expect(await t.services.webhooks.get(merchant.accountId, id)).toMatchObject({ url: URL_A, status: 'enabled' });
    const pings = await t.db.kysely.selectFrom('events').select('id').where('type', '=', 'ping').execute();
    expect(pings).toHaveLength(0);
    expect((await other.get('/admin/webhooks')).body).not.toContain(URL_A);
  });
});
