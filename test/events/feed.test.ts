import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Scope } from '../../src/auth/scopes.js';
import type { EventType } from '../../src/events/catalog.js';
import type { Event, EventsPage } from '../../src/events/schemas.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';

// The events feed (GET /v1/events, GET /v1/events/{id}): events are written here the way the
// services write them (EventsService.record in a unit of work), so the feed is tested on its own.

const URL = '/v1/events';

let t: TestApp;
let a: Tenant;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
});
afterEach(async () => t.close());

/** Records `events` in one unit of work of `accountId`, in their order, at the clock's time. */
const record = (events: Array<[EventType, object]>, accountId = a.accountId) =>
  new UnitOfWork(t.db.kysely, t.clock).run(async (w) => {
    for (const [type, data] of events) t.services.events.record(w, accountId, type, data);
  });

const get = (path: string, key = a.apiKey) => t.app.inject({ method: 'GET', url: path, headers: bearer(key) });
const list = async (query = '', key = a.apiKey): Promise<EventsPage> => {
  const response = await get(`${URL}${query}`, key);
  expect(response.statusCode, response.body).toBe(200);
  return response.json<EventsPage>();
};
const typesOf = (page: EventsPage) => page.events.map((event) => event.type);
const keyWith = async (...scopes: Scope[]) => (await t.services.auth.createApiKey(a.accountId, scopes)).key;

const customer = (id: number) => ({ customer: { id, email: `c${id}@example.com`, points_balance: 0 } });

describe('GET /v1/events', () => {
  it('answers each event as {id, type, account_id, created_at, data}, data exactly as stored', async () => {
    // Text a re-serialisation could change: non-ASCII, escapes, a float, key order, nesting, null.
    const data = {
      customer: { z: 1, a: 'Zoë "Q" \\ \u2028', n: 1.5, big: 9007199254740991, nested: { b: [1, { c: null }] } },
    };
    await record([['customer.created', data]]);
    const response = await get(URL);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = response.json<EventsPage>();
    expect(body).toEqual({
      events: [
        {
          id: expect.stringMatching(/^evt_[0-9A-Za-z]{20,}$/),
          type: 'customer.created',
          account_id: a.accountId,
          created_at: new Date(t.clock.now()).toISOString(),
          data,
        },
      ],
      metadata: { next_cursor: '', previous_cursor: '' },
    });
    expect(Object.keys(body.events[0]!)).toEqual(['id', 'type', 'account_id', 'created_at', 'data']);
    // The bytes of data are the stored JSON text.
    const [row] = await t.db.kysely.selectFrom('events').select('data').execute();
    expect(response.body).toContain(`"data":${row!.data}}`);
    expect(row!.data).toBe(JSON.stringify(data));
  });

  it('lists newest first, by creation order', async () => {
    await record([
      ['customer.created', customer(1)],
      ['customer.updated', customer(1)],
    ]);
    t.clock.advance(1000);
    await record([['reward_fulfillment.created', { reward_fulfillment: { id: 1 } }]]);
    expect(typesOf(await list())).toEqual(['reward_fulfillment.created', 'customer.updated', 'customer.created']);
  });

  it('answers an account with no events with an empty page', async () => {
    expect(await list()).toEqual({ events: [], metadata: { next_cursor: '', previous_cursor: '' } });
  });

  it('filters by one type, or a comma-separated list of types', async () => {
    await record([
      ['customer.created', customer(1)],
      ['activity.created', { activity: { id: 1 } }],
      ['points_transaction.created', { points_transaction: { id: 1 }, ...customer(1) }],
      ['customer.updated', customer(1)],
    ]);
    expect(typesOf(await list('?type=customer.created'))).toEqual(['customer.created']);
    expect(typesOf(await list('?type=customer.created,points_transaction.created'))).toEqual([
      'points_transaction.created',
      'customer.created',
    ]);
    expect(typesOf(await list(`?type=${encodeURIComponent('customer.updated, activity.created')}`))).toEqual([
      'customer.updated',
      'activity.created',
    ]);
    expect(typesOf(await list('?type=ping'))).toEqual([]);
  });

  for (const type of ['customer.deleted', 'customer.created,nope', 'customer.created,', '*', 'Customer.Created']) {
    it(`refuses type=${type}: 400 invalid_parameter naming type`, async () => {
      const error = expectError(await get(`${URL}?type=${encodeURIComponent(type)}`), 'invalid_parameter');
      expect(error.details).toEqual([{ field: 'type', message: expect.stringContaining('unknown event type') }]);
    });
  }

  it('filters by created_at_min (inclusive)', async () => {
    const start = t.clock.now();
    await record([['customer.created', customer(1)]]);
    t.clock.advance(60_000);
    await record([['customer.created', customer(2)]]);
    t.clock.advance(60_000);
    await record([['customer.created', customer(3)]]);
    const ids = (page: EventsPage) => page.events.map((event) => (event.data.customer as { id: number }).id);
    expect(ids(await list(`?created_at_min=${new Date(start + 60_000).toISOString()}`))).toEqual([3, 2]);
    // Another offset naming the same instant.
    expect(ids(await list(`?created_at_min=${encodeURIComponent('2026-01-01T01:02:00+01:00')}`))).toEqual([3]);
    expect(ids(await list(`?created_at_min=${new Date(start + 120_001).toISOString()}`))).toEqual([]);
    expectError(await get(`${URL}?created_at_min=yesterday`), 'invalid_parameter');
  });

  it('refuses a bad limit or cursor: 400', async () => {
    for (const limit of ['0', '251', 'ten', '1e2'])
      expectError(await get(`${URL}?limit=${limit}`), 'invalid_parameter');
    expectError(await get(`${URL}?cursor=nonsense`), 'invalid_cursor');
  });

  it('pages with cursors both ways; a cursor is bound to its filters', async () => {
    await record(Array.from({ length: 7 }, (_, i): [EventType, object] => ['customer.created', customer(i + 1)]));
    await record([['customer.updated', customer(1)]]);
    const ids = (page: EventsPage) => page.events.map((event) => (event.data.customer as { id: number }).id);
    const q = '?type=customer.created&limit=3';
    const page1 = await list(q);
    expect(ids(page1)).toEqual([7, 6, 5]);
    expect(page1.metadata.previous_cursor).toBe('');
    const page2 = await list(`${q}&cursor=${page1.metadata.next_cursor}`);
    expect(ids(page2)).toEqual([4, 3, 2]);
    const page3 = await list(`${q}&cursor=${page2.metadata.next_cursor}`);
    expect(ids(page3)).toEqual([1]);
    expect(page3.metadata.next_cursor).toBe('');
    const back = await list(`${q}&cursor=${page3.metadata.previous_cursor}`);
    expect(ids(back)).toEqual([4, 3, 2]);
    // Another limit is fine; other filters are not.
    expect(ids(await list(`?type=customer.created&limit=2&cursor=${page1.metadata.next_cursor}`))).toEqual([4, 3]);
    const cursor = page1.metadata.next_cursor;
    expectError(await get(`${URL}?limit=3&cursor=${cursor}`), 'invalid_cursor');
    expectError(await get(`${URL}?type=customer.updated&limit=3&cursor=${cursor}`), 'invalid_cursor');
    expectError(
      await get(`${URL}?type=customer.created&created_at_min=2020-01-01T00:00:00Z&cursor=${cursor}`),
      'invalid_cursor',
    );
    // The same types written another way are the same filter.
    expect(ids(await list(`?type=customer.created,customer.created&limit=3&cursor=${cursor}`))).toEqual([4, 3, 2]);
  });

  it("binds a cursor to the types the credential reads: another credential's scopes refuse it", async () => {
    await record(Array.from({ length: 3 }, (_, i): [EventType, object] => ['customer.created', customer(i + 1)]));
    const cursor = (await list('?limit=1')).metadata.next_cursor;
    expect(cursor).not.toBe('');
    const narrow = await keyWith('event:read', 'customer:read');
    expectError(await get(`${URL}?limit=1&cursor=${cursor}`, narrow), 'invalid_cursor');
    const own = (await list('?limit=1', narrow)).metadata.next_cursor;
    expect((await list(`?limit=1&cursor=${own}`, narrow)).events).toHaveLength(1);
  });

  it('shows a credential only the types its scopes can read, the type filter intersected with them', async () => {
    await record([
      ['customer.created', customer(1)],
      ['points_transaction.created', { points_transaction: { id: 1 }, ...customer(1) }],
      ['customer.vip_tier_changed', { vip_tier_change: { id: 1, customer_id: 1 } }],
      ['activity.created', { activity: { id: 1 } }],
      ['points_purchase.created', { points_purchase: { id: 1 } }],
      ['reward_fulfillment.created', { reward_fulfillment: { id: 1 } }],
      ['ping', {}],
      ['customer.updated', customer(1)],
    ]);
    const customers = await keyWith('event:read', 'customer:read');
    expect(typesOf(await list('', customers))).toEqual([
      'customer.updated',
      'customer.vip_tier_changed',
      'customer.created',
    ]);
    expect(typesOf(await list('?type=points_transaction.created', customers))).toEqual([]);
    expect(typesOf(await list('?type=points_transaction.created,customer.created', customers))).toEqual([
      'customer.created',
    ]);
    // A :write scope reads its resource; activities and purchases are seen with the scope that makes them.
    const writers = await keyWith('event:read', 'points_transaction:write', 'activity:write', 'points_purchase:write');
    expect(typesOf(await list('', writers))).toEqual([
      'points_purchase.created',
      'activity.created',
      'points_transaction.created',
    ]);
    const webhooks = await keyWith('event:read', 'webhook_endpoint:read', 'reward_fulfillment:read');
    expect(typesOf(await list('', webhooks))).toEqual(['ping', 'reward_fulfillment.created']);
    expect(typesOf(await list('', await keyWith('event:read')))).toEqual([]);
    // Reading the resources is not enough: the feed needs event:read.
    expectError(await get(URL, await keyWith('customer:read', 'points_transaction:read')), 'insufficient_scope');
  });

  it("never shows another account's events", async () => {
    const b = await createTenant(t.services, 'Shop B');
    await record([['customer.created', customer(1)]]);
    await record([['customer.created', customer(2)]], b.accountId);
    const mine = await list();
    expect(mine.events.map((event) => event.account_id)).toEqual([a.accountId]);
    const theirs = await list('', b.apiKey);
    expect(theirs.events.map((event) => event.account_id)).toEqual([b.accountId]);
  });
});

describe('GET /v1/events/{id}', () => {
  const first = async (): Promise<Event> => (await list()).events[0]!;

  it('answers {"event": …}, the same event as the feed, data as stored', async () => {
    const data = { reward_fulfillment: { id: 3, code: 'K7MP2XQ9RT4WBN3H', note: 'é\u2028' } };
    await record([['reward_fulfillment.updated', data]]);
    const listed = await first();
    const response = await get(`${URL}/${listed.id}`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ event: listed });
    expect(response.json().event.data).toEqual(data);
    expect(response.body).toBe(
      `{"event":{"id":"${listed.id}","type":"reward_fulfillment.updated","account_id":${a.accountId},` +
        `"created_at":"${listed.created_at}","data":${JSON.stringify(data)}}}`,
    );
  });

  it("answers 404 not_found for an unknown id and for another account's event", async () => {
    const b = await createTenant(t.services, 'Shop B');
    await record([['customer.created', customer(1)]], b.accountId);
    const theirs = (await list('', b.apiKey)).events[0]!;
    expect((await get(`${URL}/${theirs.id}`, b.apiKey)).statusCode).toBe(200);
    expectError(await get(`${URL}/${theirs.id}`), 'not_found');
    expectError(await get(`${URL}/evt_000000000000000000000000`), 'not_found');
  });

  it('answers 404 not_found for a type the credential cannot read', async () => {
    await record([['points_transaction.created', { points_transaction: { id: 1 }, ...customer(1) }]]);
    const event = await first();
    expectError(await get(`${URL}/${event.id}`, await keyWith('event:read', 'customer:read')), 'not_found');
    expect((await get(`${URL}/${event.id}`, await keyWith('event:read', 'points_transaction:read'))).statusCode).toBe(
      200,
    );
  });

  it('refuses an id that is not an event id: 400 invalid_parameter', async () => {
    for (const id of ['42', 'evt_short', 'cus_000000000000000000000000']) {
      expectError(await get(`${URL}/${id}`), 'invalid_parameter');
    }
  });
});
