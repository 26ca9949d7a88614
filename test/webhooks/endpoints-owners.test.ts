import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventType } from '../../src/events/catalog.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { WEBHOOK_DELIVERY_QUEUE } from '../../src/webhooks/service.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { loyaltyInProcess } from '../helpers/cli.js';
import { expectError } from '../helpers/contract.js';
import { requestsOfEndpoint } from '../helpers/webhook-routes.js';
import { authorize, exchange, type OAuthFixture, setupOAuth } from '../oauth/helpers.js';

// Issue 49: whoever makes an endpoint, it is sent only what that credential can read, and an
// app's token sees and changes only its own app's endpoints, however the token was issued: by
// `loyalty tokens issue --app` (no OAuth grant) exactly as through the OAuth flow (a grant).

const CUSTOMER_TYPES = ' customer.created customer.updated customer.points_expiring customer.vip_tier_changed ';

let t: TestApp;
let f: OAuthFixture;
let apiKey: string;

beforeEach(async () => {
  t = await createTestApp();
  f = await setupOAuth(t);
  apiKey = (await t.services.auth.createApiKey(f.accountId)).key;
});
afterEach(async () => t.close());

const send = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload }) });
const create = (token: string, enabled: string[], url = 'https://app.example/hooks') =>
  send('POST', '/v1/webhook_endpoints', token, { webhook_endpoint: { url, enabled_events: enabled } });
const row = (id: number) =>
  t.db.kysely.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const endpointRows = () => t.db.kysely.selectFrom('webhook_endpoints').selectAll().orderBy('id').execute();
/** Records events of these types in one unit of work, as the services do; answers their public ids by type. */
const record = async (...types: EventType[]): Promise<Record<string, string>> => {
  const uow = new UnitOfWork(t.db.kysely, t.clock);
  await uow.run(async (w) => {
    for (const type of types)
      t.services.events.record(w, f.accountId, type, { customer: { email: 'zoe@example.com' } });
  });
  const events = await t.db.kysely.selectFrom('events').select(['public_id', 'type']).execute();
  return Object.fromEntries(events.map((e) => [e.type, e.public_id]));
};
/** The delivery jobs queued: which endpoint, which event type. */
const deliveries = async () =>
  (
    await t.db.kysely
      .selectFrom('jobs')
      .innerJoin('events', 'events.id', 'jobs.subject_id')
      .select(['jobs.payload', 'events.type'])
      .where('jobs.queue', '=', WEBHOOK_DELIVERY_QUEUE)
      .orderBy('jobs.id')
      .execute()
  ).map((job) => ({ endpoint: JSON.parse(job.payload).webhook_endpoint_id as number, type: job.type }));

/** How a token of the fixture's app with `scope` is issued. */
const issuers = [
  {
    how: '`loyalty tokens issue --app` (no grant)',
    issue: async (scope: string): Promise<string> => {
      const args = ['tokens', 'issue', '--account', String(f.accountId), '--app', f.clientId, '--scopes', scope];
      const issued = await loyaltyInProcess([...args, '--json'], { DATABASE_URL: t.url });
      expect(issued.code, issued.stderr).toBe(0);
      return issued.json<{ access_token: string }>().access_token;
    },
  },
  {
    how: 'the OAuth flow (a grant)',
    issue: async (scope: string): Promise<string> => {
      const { code } = await authorize(t, f, { scope });
      const response = await exchange(t, f, code);
      expect(response.statusCode, response.body).toBe(200);
      return response.json<{ access_token: string }>().access_token;
    },
  },
];

describe.each(issuers)('an app token issued through $how', ({ issue }) => {
  it('makes endpoints sent only what its scopes can read, whatever enabled_events names', async () => {
    const appId = (await t.services.apps.requireByClientId(f.clientId)).id;
    // The security review's token: webhook_endpoint:write alone reads no event type.
    const bare = await issue('webhook_endpoint:write');
    const refused = await create(bare, ['*']);
    expect(expectError(refused, 'invalid_parameter').details[0].field).toBe('webhook_endpoint.enabled_events');
    expect(await endpointRows()).toEqual([]);

    const token = await issue('webhook_endpoint:write customer:read');
    const made = await create(token, ['*']);
    expect(made.statusCode, made.body).toBe(201);
    const endpoint = made.json().webhook_endpoint;
    expect(endpoint.enabled_events).toEqual(['*']);
    expect(await row(endpoint.id)).toMatchObject({
      app_id: appId,
      scopes: 'customer:read webhook_endpoint:write',
      event_types: CUSTOMER_TYPES,
    });

    // A ledger entry (which carries the customer's email) is not sent; the customer's event is.
    await record('customer.created', 'points_transaction.created');
    expect(await deliveries()).toEqual([{ endpoint: endpoint.id, type: 'customer.created' }]);
  });

  it("never sees or changes the merchant's endpoints, nor another app's, nor resends to them", async () => {
    const token = await issue('webhook_endpoint:write customer:read');
    const mine = (await create(token, ['customer.created'])).json().webhook_endpoint;
    const merchants = (await create(apiKey, ['*'], 'https://merchant.example/hooks')).json().webhook_endpoint;
    const other = await t.services.apps.create({ name: 'Other app', redirectUris: ['https://other.example/cb'] });
    const othersToken = await t.services.auth.issueAccessToken({ accountId: f.accountId, clientId: other.client_id });
    const others = (await create(othersToken.access_token, ['customer.created'])).json().webhook_endpoint;

    const listed = (await send('GET', '/v1/webhook_endpoints', token)).json();
    expect(listed.webhook_endpoints.map((e: { id: number }) => e.id)).toEqual([mine.id]);
    const all = (await send('GET', '/v1/webhook_endpoints', apiKey)).json();
    expect(all.webhook_endpoints.map((e: { id: number }) => e.id)).toEqual([others.id, merchants.id, mine.id]);

    const { 'customer.created': event } = await record('customer.created');
    const before = await endpointRows();
    const jobsBefore = await deliveries();
    for (const target of [merchants.id, others.id]) {
      for (const [method, url, payload] of requestsOfEndpoint(target, event!)) {
        expectError(await send(method, url, token, payload), 'not_found');
      }
    }
    expect(await endpointRows()).toEqual(before);
    expect(await deliveries()).toEqual(jobsBefore);
    // Its own endpoint, it may change.
    const patched = await send('PATCH', `/v1/webhook_endpoints/${mine.id}`, token, {
      webhook_endpoint: { description: 'mine' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
  });

  it('resends to its endpoint only events its scopes can read; nobody resends it what it may not be sent', async () => {
    const token = await issue('webhook_endpoint:write customer:read');
    const endpoint = (await create(token, ['customer.created'])).json().webhook_endpoint;
    const events = await record('customer.updated', 'points_transaction.created');
    const resend = (type: string, credential: string) =>
      send('POST', `/v1/events/${events[type]}/resend`, credential, { webhook_endpoint_id: endpoint.id });

    const readable = await resend('customer.updated', token);
    expect(readable.statusCode, readable.body).toBe(202);
    // The merchant's key reads the ledger, but the endpoint may not be sent it.
    for (const credential of [token, apiKey])
      expectError(await resend('points_transaction.created', credential), 'not_found');
    expect((await deliveries()).filter((d) => d.endpoint === endpoint.id)).toEqual([
      { endpoint: endpoint.id, type: 'customer.updated' },
    ]);
  });
});

describe('an endpoint made with an API key', () => {
  it("is narrowed by a limited key's scopes; an all-scopes key's and the console's receive what they name", async () => {
    const limited = (await t.services.auth.createApiKey(f.accountId, ['webhook_endpoint:write', 'customer:read'])).key;
    const narrowed = (await create(limited, ['*'])).json().webhook_endpoint;
    expect(await row(narrowed.id)).toMatchObject({ app_id: null, event_types: CUSTOMER_TYPES });
    const bare = (await t.services.auth.createApiKey(f.accountId, ['webhook_endpoint:write'])).key;
    expectError(await create(bare, ['points_transaction.created']), 'invalid_parameter');

    const full = (await create(apiKey, ['*'])).json().webhook_endpoint;
    expect(await row(full.id)).toMatchObject({ app_id: null, event_types: '*' });
    const console = await t.services.webhooks.create(
      { accountId: f.accountId, grantId: null, scopes: null },
      { url: 'https://merchant.example/hooks', enabled_events: ['*'] },
    );
    expect(await row(console.id)).toMatchObject({ app_id: null, scopes: null, event_types: '*' });

    await record('customer.created', 'points_transaction.created');
    expect(await deliveries()).toEqual([
      { endpoint: narrowed.id, type: 'customer.created' },
      { endpoint: full.id, type: 'customer.created' },
      { endpoint: console.id, type: 'customer.created' },
      { endpoint: full.id, type: 'points_transaction.created' },
      { endpoint: console.id, type: 'points_transaction.created' },
    ]);
  });

  it('narrows an endpoint a limited key re-points to what that key can read, and resends it only that', async () => {
    const console = await t.services.webhooks.create(
      { accountId: f.accountId, grantId: null, scopes: null },
      { url: 'https://merchant.example/hooks', enabled_events: ['*'] },
    );
    const limited = (await t.services.auth.createApiKey(f.accountId, ['webhook_endpoint:write', 'customer:read'])).key;
    const path = `/v1/webhook_endpoints/${console.id}`;
    // A description is no re-pointing: nothing narrowed.
    expect((await send('PATCH', path, limited, { webhook_endpoint: { description: 'd' } })).statusCode).toBe(200);
    expect(await row(console.id)).toMatchObject({ scopes: null, event_types: '*' });
    const events = await record('points_transaction.created');
    const resend = () =>
      send('POST', `/v1/events/${events['points_transaction.created']}/resend`, limited, {
        webhook_endpoint_id: console.id,
      });
    expectError(await resend(), 'not_found');

    const repointed = await send('PATCH', path, limited, { webhook_endpoint: { url: 'https://key-holder.example/' } });
    expect(repointed.statusCode, repointed.body).toBe(200);
    expect(repointed.json().webhook_endpoint.enabled_events).toEqual(['*']);
    expect(await row(console.id)).toMatchObject({
      scopes: 'customer:read webhook_endpoint:write',
      event_types: CUSTOMER_TYPES,
    });
    // Widening it again takes a credential that reads more, and stays within what it was narrowed to.
    await send('PATCH', path, apiKey, { webhook_endpoint: { enabled_events: ['*'] } });
    expect((await row(console.id)).event_types).toBe(CUSTOMER_TYPES);
  });
});
