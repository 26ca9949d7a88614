import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../src/webhooks/schemas.js';
import { WEBHOOK_DELIVERY_QUEUE } from '../../src/webhooks/service.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';

// The webhook endpoints room over HTTP: shapes, validation (nothing written on a refusal), the
// secret shown once and stored sealed, tenancy, the limit, status changes and the test event.

const URL_OK = 'https://receiver.example/hooks';

const endpointBody = (fields: Record<string, unknown> = {}) => ({
  webhook_endpoint: { url: URL_OK, enabled_events: ['customer.created'], ...fields },
});

/** Every row count a refused request must leave as it was. */
async function counts(t: TestApp): Promise<{ endpoints: number; jobs: number; events: number }> {
  const count = async (table: 'webhook_endpoints' | 'jobs' | 'events') =>
    Number(
      (
        await t.db.kysely
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { endpoints: await count('webhook_endpoints'), jobs: await count('jobs'), events: await count('events') };
}

/** The pending delivery jobs, oldest first. */
async function deliveryJobs(t: TestApp) {
  const rows = await t.db.kysely
    .selectFrom('jobs')
    .selectAll()
    .where('queue', '=', WEBHOOK_DELIVERY_QUEUE)
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    accountId: Number(row.account_id),
    groupKey: row.group_key,
    subjectId: Number(row.subject_id),
    payload: JSON.parse(row.payload),
    runAt: Number(row.run_at),
  }));
}

describe('webhook endpoints', () => {
  let t: TestApp;
  let a: Tenant;

  const send = (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: unknown,
    token = a.apiKey,
  ): Promise<LightMyRequestResponse> =>
    t.app.inject({
      method,
      url,
      headers: bearer(token),
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });
  const create = async (fields: Record<string, unknown> = {}, token = a.apiKey) => {
    const response = await send('POST', '/v1/webhook_endpoints', endpointBody(fields), token);
    expect(response.statusCode, response.body).toBe(201);
    return response.json().webhook_endpoint;
  };

  beforeEach(async () => {
    t = await createTestApp();
    a = await createTenant(t.services, 'Shop A');
  });
  afterEach(async () => t.close());

  it('creates, reads, lists, changes and deletes an endpoint, in the contract shapes', async () => {
    const created = await send(
      'POST',
      '/v1/webhook_endpoints',
      endpointBody({ description: 'Checkout', enabled_events: ['points_purchase.created', 'customer.created'] }),
    );
    expect(created.statusCode, created.body).toBe(201);
    const endpoint = created.json().webhook_endpoint;
    expect(Object.keys(created.json())).toEqual(['webhook_endpoint']);
    expect(endpoint).toEqual({
      id: expect.any(Number),
      url: URL_OK,
      description: 'Checkout',
      enabled_events: ['points_purchase.created', 'customer.created'],
      status: 'enabled',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    expect(Buffer.from(endpoint.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    const { secret, ...shown } = endpoint;

    const got = await send('GET', `/v1/webhook_endpoints/${endpoint.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual({ webhook_endpoint: shown });

    const listed = await send('GET', '/v1/webhook_endpoints');
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual({ webhook_endpoints: [shown], metadata: { next_cursor: '', previous_cursor: '' } });

    t.clock.advance(1000);
    const patched = await send('PATCH', `/v1/webhook_endpoints/${endpoint.id}`, {
      webhook_endpoint: { url: 'https://other.example/in', description: '', enabled_events: ['*'] },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toEqual({
      webhook_endpoint: {
        ...shown,
        url: 'https://other.example/in',
        description: '',
        enabled_events: ['*'],
        updated_at: '2026-01-01T00:00:01.000Z',
      },
    });
    const row = await t.db.kysely.selectFrom('webhook_endpoints').selectAll().executeTakeFirstOrThrow();
    expect(row.event_types).toBe('*');

    const deleted = await send('DELETE', `/v1/webhook_endpoints/${endpoint.id}`);
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    expectError(await send('GET', `/v1/webhook_endpoints/${endpoint.id}`), 'not_found');
    expectError(await send('DELETE', `/v1/webhook_endpoints/${endpoint.id}`), 'not_found');
    expect((await counts(t)).endpoints).toBe(0);
  });

  it('shows the secret on create and rotate only, and stores it sealed', async () => {
    const endpoint = await create();
    const row = async () =>
      t.db.kysely.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
    const stored = await row();
    const raw = endpoint.secret.slice('whsec_'.length);
    for (const column of [stored.secret, JSON.stringify(stored)]) {
      expect(column).not.toContain(endpoint.secret);
      expect(column).not.toContain(raw);
    }
    expect(await t.services.webhooks.secrets.open(a.accountId, stored.secret)).toBe(endpoint.secret);
    for (const response of [
      await send('GET', `/v1/webhook_endpoints/${endpoint.id}`),
      await send('GET', '/v1/webhook_endpoints'),
      await send('PATCH', `/v1/webhook_endpoints/${endpoint.id}`, { webhook_endpoint: { description: 'x' } }),
    ]) {
      expect(response.statusCode).toBe(200);
      expect(response.body).not.toContain('secret');
      expect(response.body).not.toContain(raw);
    }

    t.clock.advance(5000);
    const rotated = await send('POST', `/v1/webhook_endpoints/${endpoint.id}/rotate_secret`);
    expect(rotated.statusCode, rotated.body).toBe(200);
    const next = rotated.json().webhook_endpoint;
    expect(next.secret).toMatch(/^whsec_/);
    expect(next.secret).not.toBe(endpoint.secret);
    expect(next.updated_at).toBe('2026-01-01T00:00:05.000Z');
    const after = await row();
    expect(await t.services.webhooks.secrets.open(a.accountId, after.secret)).toBe(next.secret);
    expect(after.previous_secret).toBe(stored.secret);
    expect(Number(after.previous_secret_expires_at)).toBe(t.clock.now() + 24 * 60 * 60 * 1000);
    expect(JSON.stringify(after)).not.toContain(next.secret.slice('whsec_'.length));
  });

  it('refuses every invalid body with a contract error, writing nothing', async () => {
    await create();
    const before = await counts(t);
    const cases: Array<[unknown, string]> = [
      [{ enabled_events: ['customer.created'] }, 'webhook_endpoint.url'],
      [{ url: URL_OK }, 'webhook_endpoint.enabled_events'],
      [{ url: 5, enabled_events: ['*'] }, 'webhook_endpoint.url'],
      [{ url: 'not a url', enabled_events: ['*'] }, 'webhook_endpoint.url'],
      [{ url: URL_OK, enabled_events: [] }, 'webhook_endpoint.enabled_events'],
      [{ url: URL_OK, enabled_events: ['customer.deleted'] }, 'webhook_endpoint.enabled_events.0'],
      [{ url: URL_OK, enabled_events: ['ping'] }, 'webhook_endpoint.enabled_events.0'],
      [{ url: URL_OK, enabled_events: ['*', 'customer.created'] }, 'webhook_endpoint.enabled_events'],
      [{ url: URL_OK, enabled_events: 'customer.created' }, 'webhook_endpoint.enabled_events'],
      [{ url: URL_OK, enabled_events: ['*'], description: 'x'.repeat(1001) }, 'webhook_endpoint.description'],
      [{ url: URL_OK, enabled_events: ['*'], description: 'a\u0000b' }, 'webhook_endpoint.description'],
      [{ url: URL_OK, enabled_events: ['*'], status: 'paused' }, 'webhook_endpoint.status'],
      [{ url: URL_OK, enabled_events: ['*'], secret: 'whsec_mine' }, 'webhook_endpoint.secret'],
      [{ url: `${URL_OK}/\u0000`, enabled_events: ['*'] }, 'webhook_endpoint.url'],
    ];
    for (const [body, field] of cases) {
      const response = await send('POST', '/v1/webhook_endpoints', { webhook_endpoint: body });
      const error = expectError(response, 'invalid_parameter');
      expect(
        error.details.map((d: { field: string }) => d.field),
        JSON.stringify(body),
      ).toContain(field);
    }
    // Without the `webhook_endpoint` key the body is not of the documented shape.
    expectError(await send('POST', '/v1/webhook_endpoints', { url: URL_OK }), 'invalid_request');
    const id = (await send('GET', '/v1/webhook_endpoints')).json().webhook_endpoints[0].id;
    for (const [body, field] of cases.slice(2)) {
      const response = await send('PATCH', `/v1/webhook_endpoints/${id}`, { webhook_endpoint: body });
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json().error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    expect(await counts(t)).toEqual(before);
    // The description's bound itself is accepted.
    await create({ description: 'x'.repeat(1000) });
  });

  it('refuses every forbidden address class when saving, naming webhook_endpoint.url', async () => {
    const refused = [
      'https://127.0.0.1/',
      'https://127.1.2.3:8443/x',
      'https://[::1]/',
      'https://10.0.0.1/',
      'https://172.16.0.1/',
      'https://172.31.255.254/',
      'https://192.168.1.1/',
      'https://[fc00::1]/',
      'https://[fd12:3456::1]/',
      'https://[fe80::1]/',
      'https://169.254.169.254/latest/meta-data/',
      'https://100.64.0.1/',
      'https://0.0.0.0/',
      'https://224.0.0.1/',
      'https://255.255.255.255/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:10.0.0.1]/',
      'https://[::]/',
      'https://2130706433/',
      'https://0x7f000001/',
      'https://0x7f.0.0.1/',
      'https://017700000001/',
      'https://localhost/',
      'https://api.localhost/',
      'http://receiver.example/hooks',
      'ftp://receiver.example/hooks',
      'https://user:pass@receiver.example/hooks',
      'https://user@receiver.example/hooks',
      `https://receiver.example/${'a'.repeat(2048 - 'https://receiver.example/'.length + 1)}`,
      '/relative/path',
    ];
    const endpoint = await create();
    const before = await counts(t);
    for (const url of refused) {
      for (const [method, path] of [
        ['POST', '/v1/webhook_endpoints'],
        ['PATCH', `/v1/webhook_endpoints/${endpoint.id}`],
      ] as const) {
        const response = await send(method, path, { webhook_endpoint: { url, enabled_events: ['*'] } });
        const error = expectError(response, 'invalid_parameter');
        expect(error.details, `${method} ${url}`).toEqual([
          { field: 'webhook_endpoint.url', message: expect.any(String) },
        ]);
      }
    }
    expect(await counts(t)).toEqual(before);
    expect((await send('GET', `/v1/webhook_endpoints/${endpoint.id}`)).json().webhook_endpoint.url).toBe(URL_OK);
    // Just inside the bounds: 2,048 characters, a public address.
    await create({ url: `https://receiver.example/${'a'.repeat(2048 - 'https://receiver.example/'.length)}` });
    await create({ url: 'https://93.184.216.34/hooks' });
    await create({ url: 'https://[2606:4700::1111]/hooks' });
  });

  it('allows private addresses and http:// with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true', async () => {
    await t.close();
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    a = await createTenant(t.services, 'Private deployment');
    for (const url of ['http://127.0.0.1:4000/hooks', 'https://10.1.2.3/', 'http://localhost:9000/']) {
      expect((await create({ url })).url).toBe(url);
    }
    // Still refused: credentials, other schemes.
    for (const url of ['http://u:p@127.0.0.1/', 'ftp://127.0.0.1/']) {
      const response = await send('POST', '/v1/webhook_endpoints', endpointBody({ url }));
      expectError(response, 'invalid_parameter');
    }
  });

  it('refuses the deprecated IPv4-compatible IPv6 forms and refused ports, naming webhook_endpoint.url', async () => {
    const refuses = async (url: string, message: RegExp) => {
      const response = await send('POST', '/v1/webhook_endpoints', endpointBody({ url }));
      const error = expectError(response, 'invalid_parameter');
      expect(error.details, url).toEqual([{ field: 'webhook_endpoint.url', message: expect.stringMatching(message) }]);
    };
    for (const url of [
      'https://[::127.0.0.1]/',
      'https://[::7f00:1]/',
      'https://[0:0:0:0:0:0:127.0.0.1]/',
      'https://[::10.0.0.1]/',
      'https://[::169.254.169.254]/',
    ]) {
      await refuses(
        url,
        /IPv4-compatible IPv6 address \(deprecated\), of [\d.]+, an? .*, which webhooks may not reach/,
      );
    }
    // Whatever it embeds: the form is deprecated, and some stacks connect to it as that IPv4 address.
    await refuses('https://[::8.8.8.8]/', /IPv4-compatible IPv6 address \(deprecated\), which webhooks/);
    await refuses('https://[::ffff:169.254.169.254]/', /^::ffff:a9fe:a9fe is a link-local address/);
    for (const port of ['0', '22', '25', '6379', '11211', '10080']) {
      await refuses(`https://receiver.example:${port}/hooks`, new RegExp(`^must not use port ${port}:`));
    }
    const before = await counts(t);
    expect(before.endpoints).toBe(0);
    // Other ports serve HTTP; the default ones are no port at all to the URL.
    for (const url of [
      'https://receiver.example:8443/hooks',
      'https://receiver.example:443/',
      'https://[::ffff:8.8.8.8]/',
    ]) {
      expect((await send('POST', '/v1/webhook_endpoints', endpointBody({ url }))).statusCode, url).toBe(201);
    }
  });

  it('says which refusals WEBHOOK_ALLOW_PRIVATE_NETWORKS=true lifts; it lifts no refused port', async () => {
    const hint = '(WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows';
    for (const url of [
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://10.0.0.1/',
      'https://localhost/',
      'http://receiver.example/',
    ]) {
      const response = await send('POST', '/v1/webhook_endpoints', endpointBody({ url }));
      expect(expectError(response, 'invalid_parameter').message, url).toContain(hint);
    }
    for (const url of ['https://receiver.example:22/', 'ftp://receiver.example/', 'https://u:p@receiver.example/']) {
      const response = await send('POST', '/v1/webhook_endpoints', endpointBody({ url }));
      expect(expectError(response, 'invalid_parameter').message, url).not.toContain(hint);
    }
    await t.close();
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    a = await createTenant(t.services, 'Private deployment');
    for (const url of ['http://127.0.0.1:0/', 'http://127.0.0.1:6379/', 'https://[::127.0.0.1]:22/']) {
      const response = await send('POST', '/v1/webhook_endpoints', endpointBody({ url }));
      expect(expectError(response, 'invalid_parameter').message, url).toMatch(/must not use port/);
    }
  });

  it('refuses the 21st endpoint of an account, and counts per account', async () => {
    for (let i = 0; i < 20; i++) await create({ url: `https://receiver.example/${i}` });
    const before = await counts(t);
    const refused = await send('POST', '/v1/webhook_endpoints', endpointBody());
    const error = expectError(refused, 'invalid_parameter');
    expect(error.details[0].field).toBe('webhook_endpoint');
    expect(error.message).toContain('20');
    expect(await counts(t)).toEqual(before);
    // Another account has its own 20.
    const b = await createTenant(t.services, 'Shop B');
    await create({}, b.apiKey);
    // Deleting one makes room again.
    const first = (await send('GET', '/v1/webhook_endpoints?limit=1')).json().webhook_endpoints[0];
    expect((await send('DELETE', `/v1/webhook_endpoints/${first.id}`)).statusCode).toBe(204);
    await create();
  });

  it('pages the list with the cursors of every list', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create({ url: `https://receiver.example/${i}` })).id);
    const first = (await send('GET', '/v1/webhook_endpoints?limit=2')).json();
    expect(first.webhook_endpoints.map((e: { id: number }) => e.id)).toEqual([ids[4], ids[3]]);
    expect(first.metadata.previous_cursor).toBe('');
    const second = (await send('GET', `/v1/webhook_endpoints?limit=2&cursor=${first.metadata.next_cursor}`)).json();
    expect(second.webhook_endpoints.map((e: { id: number }) => e.id)).toEqual([ids[2], ids[1]]);
    const back = (await send('GET', `/v1/webhook_endpoints?limit=2&cursor=${second.metadata.previous_cursor}`)).json();
    expect(back.webhook_endpoints.map((e: { id: number }) => e.id)).toEqual([ids[4], ids[3]]);
    expectError(await send('GET', '/v1/webhook_endpoints?limit=0'), 'invalid_parameter');
    expectError(await send('GET', '/v1/webhook_endpoints?cursor=forged'), 'invalid_cursor');
    const b = await createTenant(t.services, 'Shop B');
    expectError(
      await send('GET', `/v1/webhook_endpoints?cursor=${first.metadata.next_cursor}`, undefined, b.apiKey),
      'invalid_cursor',
    );
  });

  it("answers 404 for another account's endpoint on every route, and changes nothing of it", async () => {
    const endpoint = await create();
    const b = await createTenant(t.services, 'Shop B');
    const event = await t.services.webhooks.sendTest(a.accountId, endpoint.id);
    const before = await counts(t);
    const own = await create({}, b.apiKey);
    const after = await counts(t);
    const path = `/v1/webhook_endpoints/${endpoint.id}`;
    for (const [method, url, payload] of [
      ['GET', path, undefined],
      ['PATCH', path, { webhook_endpoint: { description: 'mine now' } }],
      ['PATCH', path, { webhook_endpoint: { status: 'disabled' } }],
      ['DELETE', path, undefined],
      ['POST', `${path}/rotate_secret`, undefined],
      ['POST', `${path}/test`, undefined],
      ['GET', `${path}/deliveries`, undefined],
      ['POST', `/v1/events/${event.id}/resend`, { webhook_endpoint_id: endpoint.id }],
      // B's own endpoint, A's event.
      ['POST', `/v1/events/${event.id}/resend`, { webhook_endpoint_id: own.id }],
    ] as const) {
      expectError(await send(method, url, payload, b.apiKey), 'not_found');
    }
    expect((await send('GET', '/v1/webhook_endpoints', undefined, b.apiKey)).json().webhook_endpoints).toHaveLength(1);
    expect(await counts(t)).toEqual(after);
    expect(after.endpoints).toBe(before.endpoints + 1);
    const unchanged = (await send('GET', path)).json().webhook_endpoint;
    expect(unchanged).toMatchObject({ description: '', status: 'enabled' });
  });

  it('PATCH status disabled parks the pending deliveries; enabled resumes them and clears the failure streak', async () => {
    const endpoint = await create({ enabled_events: ['*'] });
    await t.services.webhooks.sendTest(a.accountId, endpoint.id);
    const [job] = await deliveryJobs(t);
    expect(job?.runAt).toBe(t.clock.now());
    await t.db.kysely.updateTable('webhook_endpoints').set({ failing_since: 5 }).execute();

    const disabled = await send('PATCH', `/v1/webhook_endpoints/${endpoint.id}`, {
      webhook_endpoint: { status: 'disabled' },
    });
    expect(disabled.json().webhook_endpoint.status).toBe('disabled');
    expect((await deliveryJobs(t))[0]?.runAt).toBeGreaterThan(t.clock.now() + 1e12);
    // A disabled endpoint is sent nothing: no test, no resend.
    const before = await counts(t);
    expectError(await send('POST', `/v1/webhook_endpoints/${endpoint.id}/test`), 'invalid_parameter');
    const event = (await t.db.kysely.selectFrom('events').select('public_id').executeTakeFirstOrThrow()).public_id;
    const resend = await send('POST', `/v1/events/${event}/resend`, { webhook_endpoint_id: endpoint.id });
    expect(expectError(resend, 'invalid_parameter').details[0].field).toBe('webhook_endpoint_id');
    expect(await counts(t)).toEqual(before);

    t.clock.advance(60_000);
    const enabled = await send('PATCH', `/v1/webhook_endpoints/${endpoint.id}`, {
      webhook_endpoint: { status: 'enabled' },
    });
    expect(enabled.json().webhook_endpoint.status).toBe('enabled');
    expect((await deliveryJobs(t))[0]?.runAt).toBe(t.clock.now());
    const row = await t.db.kysely.selectFrom('webhook_endpoints').selectAll().executeTakeFirstOrThrow();
    expect(row.failing_since).toBeNull();
  });

  it('DELETE drops the endpoint’s pending deliveries and delivery log, and no other endpoint’s', async () => {
    const doomed = await create({ enabled_events: ['*'] });
    const kept = await create({ enabled_events: ['*'] });
    await t.services.webhooks.sendTest(a.accountId, doomed.id);
    await t.services.webhooks.sendTest(a.accountId, kept.id);
    const event = await t.db.kysely.selectFrom('events').select('id').orderBy('id').executeTakeFirstOrThrow();
    await t.db.kysely
      .insertInto('webhook_attempts')
      .values({
        account_id: a.accountId,
        webhook_endpoint_id: doomed.id,
        event_id: event.id,
        attempt: 1,
        status_code: 500,
        error: null,
        duration_ms: 3,
        response_body: 'no',
        created_at: t.clock.now(),
      })
      .execute();
    expect((await send('DELETE', `/v1/webhook_endpoints/${doomed.id}`)).statusCode).toBe(204);
    expect((await deliveryJobs(t)).map((j) => j.payload.webhook_endpoint_id)).toEqual([kept.id]);
    expect(await t.db.kysely.selectFrom('webhook_attempts').selectAll().execute()).toEqual([]);
  });

  it('POST /test records a ping event and queues one delivery to that endpoint only', async () => {
    const endpoint = await create({ enabled_events: ['*'] });
    const other = await create({ enabled_events: ['*'] });
    const response = await send('POST', `/v1/webhook_endpoints/${endpoint.id}/test`);
    expect(response.statusCode, response.body).toBe(202);
    const { event } = response.json();
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_[0-9A-Za-z]{20,}$/),
      type: 'ping',
      account_id: a.accountId,
      created_at: '2026-01-01T00:00:00.000Z',
      data: {},
    });
    const stored = await t.db.kysely.selectFrom('events').selectAll().executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ public_id: event.id, type: 'ping', data: '{}' });
    expect(await deliveryJobs(t)).toEqual([
      {
        accountId: a.accountId,
        groupKey: `webhook_endpoint:${endpoint.id}`,
        subjectId: Number(stored.id),
        payload: { webhook_endpoint_id: endpoint.id },
        runAt: t.clock.now(),
      },
    ]);
    expect((await deliveryJobs(t)).some((j) => j.payload.webhook_endpoint_id === other.id)).toBe(false);
  });

  it('resends any event of the account to an endpoint, subscribed to its type or not', async () => {
    const endpoint = await create({ enabled_events: ['points_purchase.created'] });
    const ping = (await send('POST', `/v1/webhook_endpoints/${endpoint.id}/test`)).json().event;
    const evt = await t.db.kysely.selectFrom('events').select('id').executeTakeFirstOrThrow();
    const before = (await deliveryJobs(t)).length;
    const response = await send('POST', `/v1/events/${ping.id}/resend`, { webhook_endpoint_id: endpoint.id });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.body).toBe('');
    const jobs = await deliveryJobs(t);
    expect(jobs).toHaveLength(before + 1);
    expect(jobs.at(-1)).toMatchObject({
      subjectId: Number(evt.id),
      payload: { webhook_endpoint_id: endpoint.id, trigger: 'resend' },
    });
    const unchanged = await counts(t);
    expectError(
      await send('POST', '/v1/events/evt_doesnotexist000000000000/resend', { webhook_endpoint_id: endpoint.id }),
      'not_found',
    );
    expectError(await send('POST', `/v1/events/${ping.id}/resend`, { webhook_endpoint_id: 999999 }), 'not_found');
    expectError(await send('POST', `/v1/events/${ping.id}/resend`, {}), 'invalid_parameter');
    expectError(await send('POST', `/v1/events/${ping.id}/resend`, []), 'invalid_request');
    expectError(await send('POST', `/v1/events/${ping.id}/resend`, { webhook_endpoint_id: 'x' }), 'invalid_parameter');
    expectError(
      await send('POST', '/v1/events/not-an-event/resend', { webhook_endpoint_id: endpoint.id }),
      'invalid_parameter',
    );
    expect(await counts(t)).toEqual(unchanged);
  });

  it('lists the delivery log newest first, filtered by event, with cursors bound to the filter', async () => {
    const endpoint = await create({ enabled_events: ['*'] });
    const other = await create({ enabled_events: ['*'] });
    const first = await t.services.webhooks.sendTest(a.accountId, endpoint.id);
    const second = await t.services.webhooks.sendTest(a.accountId, endpoint.id);
    const events = await t.db.kysely.selectFrom('events').select(['id', 'public_id']).orderBy('id').execute();
    const attempt = (endpointId: number, eventId: number, n: number, fields: Record<string, unknown> = {}) => ({
      account_id: a.accountId,
      webhook_endpoint_id: endpointId,
      event_id: eventId,
      attempt: n,
      status_code: 500,
      error: null,
      duration_ms: 12,
      response_body: 'oops',
      created_at: t.clock.now() + n,
      ...fields,
    });
    await t.db.kysely
      .insertInto('webhook_attempts')
      .values([
        attempt(endpoint.id, events[0]!.id, 1),
        attempt(endpoint.id, events[0]!.id, 2, { status_code: 200, response_body: 'ok' }),
        attempt(endpoint.id, events[1]!.id, 1, { status_code: null, error: 'connect ECONNREFUSED' }),
        attempt(other.id, events[0]!.id, 1),
      ])
      .execute();
    const all = await send('GET', `/v1/webhook_endpoints/${endpoint.id}/deliveries`);
    expect(all.statusCode, all.body).toBe(200);
    const body = all.json();
    expect(body.webhook_deliveries).toHaveLength(3);
    expect(body.webhook_deliveries[0]).toEqual({
      id: expect.any(Number),
      event_id: second.id,
      event_type: 'ping',
      attempt: 1,
      status_code: null,
      error: 'connect ECONNREFUSED',
      duration_ms: 12,
      response_body: 'oops',
      created_at: new Date(t.clock.now() + 1).toISOString(),
      // Made by hand, linked to no delivery: what it recorded, that no retry followed (see delivery-log.test.ts).
      trigger: 'event',
      outcome: 'failed',
      next_attempt_at: null,
    });
    expect(body.webhook_deliveries.map((d: { event_id: string; attempt: number }) => [d.event_id, d.attempt])).toEqual([
      [second.id, 1],
      [first.id, 2],
      [first.id, 1],
    ]);
    const filtered = (
      await send('GET', `/v1/webhook_endpoints/${endpoint.id}/deliveries?event_id=${first.id}&limit=1`)
    ).json();
    expect(filtered.webhook_deliveries.map((d: { attempt: number }) => d.attempt)).toEqual([2]);
    const next = await send(
      'GET',
      `/v1/webhook_endpoints/${endpoint.id}/deliveries?event_id=${first.id}&limit=1&cursor=${filtered.metadata.next_cursor}`,
    );
    expect(next.json().webhook_deliveries.map((d: { attempt: number }) => d.attempt)).toEqual([1]);
    expectError(
      await send(
        'GET',
        `/v1/webhook_endpoints/${endpoint.id}/deliveries?limit=1&cursor=${filtered.metadata.next_cursor}`,
      ),
      'invalid_cursor',
    );
    expectError(
      await send(
        'GET',
        `/v1/webhook_endpoints/${other.id}/deliveries?event_id=${first.id}&limit=1&cursor=${filtered.metadata.next_cursor}`,
      ),
      'invalid_cursor',
    );
    const unknown = await send(
      'GET',
      `/v1/webhook_endpoints/${endpoint.id}/deliveries?event_id=evt_unknown0000000000000000`,
    );
    expect(unknown.json()).toEqual({ webhook_deliveries: [], metadata: { next_cursor: '', previous_cursor: '' } });
    expectError(await send('GET', `/v1/webhook_endpoints/${endpoint.id}/deliveries?event_id=123`), 'invalid_parameter');
    expectError(await send('GET', '/v1/webhook_endpoints/999999/deliveries'), 'not_found');
  });

  it('fans a change out to each enabled endpoint subscribed to its type: one delivery job each, none else', async () => {
    const subscribed = await create({ enabled_events: ['customer.created'] });
    const everything = await create({ enabled_events: ['*'] });
    await create({ enabled_events: ['points_purchase.created'] });
    await create({ enabled_events: ['customer.created'], status: 'disabled' });
    const b = await createTenant(t.services, 'Shop B');
    await create({ enabled_events: ['*'] }, b.apiKey);

    // A customer made through the services the API and the CLI use (customer.created).
    const customer = await t.services.customers.create(a.accountId, { email: 'jane@example.com' });
    const events = await t.db.kysely.selectFrom('events').selectAll().orderBy('id').execute();
    const created = events.filter((e) => e.type === 'customer.created');
    expect(created).toHaveLength(1);
    expect(JSON.parse(created[0]!.data).customer.id).toBe(customer.id);
    const jobs = await deliveryJobs(t);
    const forCreated = jobs.filter((j) => j.subjectId === Number(created[0]!.id));
    expect(forCreated.map((j) => j.payload.webhook_endpoint_id).sort()).toEqual([subscribed.id, everything.id].sort());
    for (const job of forCreated) {
      expect(job).toMatchObject({
        accountId: a.accountId,
        groupKey: `webhook_endpoint:${job.payload.webhook_endpoint_id}`,
        runAt: t.clock.now(),
      });
    }
    // Whatever else the change wrote (other types) reached only the `*` endpoint, and B's never.
    for (const job of jobs.filter((j) => j.subjectId !== Number(created[0]!.id))) {
      expect(job.payload.webhook_endpoint_id).toBe(everything.id);
    }
    expect(jobs.every((j) => j.accountId === a.accountId)).toBe(true);
  });

  it('reports the summary the console shows', async () => {
    expect(await t.services.webhooks.summary(a.accountId)).toEqual({ endpoints: 0, disabled: 0 });
    await create();
    await create({ status: 'disabled' });
    expect(await t.services.webhooks.summary(a.accountId)).toEqual({ endpoints: 2, disabled: 1 });
  });

  it('offers every event type of the catalog but ping', () => {
    expect(SUBSCRIBABLE_EVENT_TYPES).toContain('customer.created');
    expect(SUBSCRIBABLE_EVENT_TYPES).not.toContain('ping');
  });
});
