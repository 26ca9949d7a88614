import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { WEBHOOK_DELIVERY_QUEUE } from '../../src/webhooks/service.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { requestsOfEndpoint } from '../helpers/webhook-routes.js';
import { authorize, exchange, type OAuthFixture, postForm, setupOAuth } from '../oauth/helpers.js';

// An app's endpoints: made with an OAuth token issued under a grant, they receive only what the
// grant's scopes can read, are seen and changed only by that app (and the merchant), and are
// deleted, with their pending deliveries, whenever the grant is revoked. (A token the CLI issued
// is held to the same rules: endpoints-owners.test.ts.)

interface Tokens {
  access_token: string;
  refresh_token: string;
}

describe("an app's webhook endpoints", () => {
  let t: TestApp;
  let f: OAuthFixture;
  let apiKey: string;

  /** Tokens of a new grant of the fixture's app, with these scopes. */
  const connect = async (scope: string): Promise<Tokens> => {
    const { code } = await authorize(t, f, { scope });
    const response = await exchange(t, f, code);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<Tokens>();
  };
  const send = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: object) =>
    t.app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload }) });
  const create = async (token: string, enabled: string[]): Promise<LightMyRequestResponse> =>
    send('POST', '/v1/webhook_endpoints', token, {
      webhook_endpoint: { url: 'https://app.example/hooks', enabled_events: enabled },
    });
  const row = (id: number) =>
    t.db.kysely.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
  const grantOf = async () => {
    const grants = await t.services.oauth.listGrants(f.accountId);
    expect(grants).toHaveLength(1);
    return grants[0]!.id;
  };
  /** Records events of these types in one unit of work, as the services do. */
  const record = async (...types: Array<'customer.created' | 'points_purchase.created' | 'customer.updated'>) => {
    const uow = new UnitOfWork(t.db.kysely, t.clock);
    await uow.run(async (w) => {
      for (const type of types) t.services.events.record(w, f.accountId, type, {});
    });
  };
  const jobs = async () =>
    (
      await t.db.kysely
        .selectFrom('jobs')
        .selectAll()
        .where('queue', '=', WEBHOOK_DELIVERY_QUEUE)
        .orderBy('id')
        .execute()
    ).map((job) => ({
      endpoint: JSON.parse(job.payload).webhook_endpoint_id as number,
      subject: Number(job.subject_id),
    }));

  beforeEach(async () => {
    t = await createTestApp();
    f = await setupOAuth(t);
    apiKey = (await t.services.auth.createApiKey(f.accountId)).key;
  });
  afterEach(async () => t.close());

  it("narrows the enabled events to what the grant's scopes can read, keeping enabled_events as given", async () => {
    const tokens = await connect('webhook_endpoint:write customer:read');
    const grantId = await grantOf();
    const named = await create(tokens.access_token, ['customer.created', 'points_purchase.created']);
    expect(named.statusCode, named.body).toBe(201);
    const endpoint = named.json().webhook_endpoint;
    expect(endpoint.enabled_events).toEqual(['customer.created', 'points_purchase.created']);
    expect(await row(endpoint.id)).toMatchObject({ grant_id: grantId, event_types: ' customer.created ' });

    const all = (await create(tokens.access_token, ['*'])).json().webhook_endpoint;
    expect(all.enabled_events).toEqual(['*']);
    expect((await row(all.id))?.event_types).toBe(
      ' customer.created customer.updated customer.points_expiring customer.vip_tier_changed ',
    );

    // Nothing it can read: refused, nothing written.
    const before = await t.db.kysely.selectFrom('webhook_endpoints').selectAll().execute();
    const refused = await create(tokens.access_token, ['points_purchase.created', 'reward_fulfillment.created']);
    expect(expectError(refused, 'invalid_parameter').details[0].field).toBe('webhook_endpoint.enabled_events');
    expect(await t.db.kysely.selectFrom('webhook_endpoints').selectAll().execute()).toEqual(before);

    // The fan-out follows the narrowed list: customer.created reaches both, the purchase neither.
    await record('customer.created', 'points_purchase.created');
    const created = await t.db.kysely
      .selectFrom('events')
      .select('id')
      .where('type', '=', 'customer.created')
      .executeTakeFirstOrThrow();
    expect(await jobs()).toEqual([
      { endpoint: named.json().webhook_endpoint.id, subject: Number(created.id) },
      { endpoint: all.id, subject: Number(created.id) },
    ]);
  });

  it("keeps narrowing by the grant's scopes when the merchant changes an app's endpoint", async () => {
    const tokens = await connect('webhook_endpoint:write customer:read');
    const endpoint = (await create(tokens.access_token, ['customer.created'])).json().webhook_endpoint;
    const patched = await send('PATCH', `/v1/webhook_endpoints/${endpoint.id}`, apiKey, {
      webhook_endpoint: { enabled_events: ['*'] },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().webhook_endpoint.enabled_events).toEqual(['*']);
    expect((await row(endpoint.id))?.event_types).toBe(
      ' customer.created customer.updated customer.points_expiring customer.vip_tier_changed ',
    );
  });

  it("shows an app only its own grant's endpoints; the merchant sees every one", async () => {
    const tokens = await connect('webhook_endpoint:write customer:read');
    const mine = (await create(tokens.access_token, ['customer.created'])).json().webhook_endpoint;
    const merchants = (await create(apiKey, ['*'])).json().webhook_endpoint;
    expect((await row(merchants.id))?.grant_id).toBeNull();

    const listed = (await send('GET', '/v1/webhook_endpoints', tokens.access_token)).json();
    expect(listed.webhook_endpoints.map((e: { id: number }) => e.id)).toEqual([mine.id]);
    const all = (await send('GET', '/v1/webhook_endpoints', apiKey)).json();
    expect(all.webhook_endpoints.map((e: { id: number }) => e.id)).toEqual([merchants.id, mine.id]);

    // The merchant's endpoint is not the app's to read, re-point or resend to (it receives `*`).
    const ping = await t.services.webhooks.sendTest(f.accountId, merchants.id);
    for (const [method, url, payload] of requestsOfEndpoint(merchants.id, ping.id)) {
      expectError(await send(method, url, tokens.access_token, payload), 'not_found');
    }
    expect((await row(merchants.id))?.url).toBe('https://app.example/hooks');
  });

  it("resends to an app's endpoint only the event types its grant can read", async () => {
    const tokens = await connect('webhook_endpoint:write customer:read');
    const endpoint = (await create(tokens.access_token, ['customer.created'])).json().webhook_endpoint;
    await record('customer.updated', 'points_purchase.created');
    const events = await t.db.kysely.selectFrom('events').select(['public_id', 'type']).execute();
    const of = (type: string) => events.find((e) => e.type === type)!.public_id;
    const before = (await jobs()).length;
    // Readable, though not subscribed: sent.
    const readable = await send('POST', `/v1/events/${of('customer.updated')}/resend`, tokens.access_token, {
      webhook_endpoint_id: endpoint.id,
    });
    expect(readable.statusCode, readable.body).toBe(202);
    // Not readable by the grant: not found, whoever asks.
    for (const token of [tokens.access_token, apiKey]) {
      const response = await send('POST', `/v1/events/${of('points_purchase.created')}/resend`, token, {
        webhook_endpoint_id: endpoint.id,
      });
      expectError(response, 'not_found');
    }
    expect(await jobs()).toHaveLength(before + 1);
  });

  it('deletes the endpoints and their pending deliveries when the merchant disconnects the app', async () => {
    const tokens = await connect('webhook_endpoint:write customer:read');
    const endpoint = (await create(tokens.access_token, ['customer.created'])).json().webhook_endpoint;
    const merchants = (await create(apiKey, ['*'])).json().webhook_endpoint;
    await record('customer.created');
    expect((await jobs()).map((j) => j.endpoint).sort()).toEqual([endpoint.id, merchants.id].sort());

    await t.services.oauth.revokeGrant(f.accountId, await grantOf());
    expect(await row(endpoint.id)).toBeUndefined();
    expect((await jobs()).map((j) => j.endpoint)).toEqual([merchants.id]);
    expect(await row(merchants.id)).toBeDefined();
    expectError(await send('GET', '/v1/webhook_endpoints', tokens.access_token), 'unauthorized');
  });

  it('deletes them when the app revokes its refresh token (RFC 7009), and when a refresh token is replayed', async () => {
    const first = await connect('webhook_endpoint:write customer:read');
    const doomed = (await create(first.access_token, ['customer.created'])).json().webhook_endpoint;
    const revoked = await postForm(t, '/oauth2/revoke', {
      token: first.refresh_token,
      client_id: f.clientId,
      client_secret: f.clientSecret ?? undefined,
    });
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(await row(doomed.id)).toBeUndefined();

    // A refresh token used twice revokes its grant (reuse detection): the endpoints go too.
    const second = await connect('webhook_endpoint:write customer:read');
    const replayed = (await create(second.access_token, ['customer.created'])).json().webhook_endpoint;
    const refresh = () =>
      postForm(t, '/oauth2/token', {
        grant_type: 'refresh_token',
        refresh_token: second.refresh_token,
        client_id: f.clientId,
        client_secret: f.clientSecret ?? undefined,
      });
    expect((await refresh()).statusCode).toBe(200);
    expect(await row(replayed.id)).toBeDefined();
    expect((await refresh()).statusCode).toBe(400);
    expect(await row(replayed.id)).toBeUndefined();
  });
});
