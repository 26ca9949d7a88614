import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CustomerIdentity, CustomerIdentityResponse } from '../../src/customer-identities/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';

const URL = '/v1/customer_identities/create_or_update';

let t: TestApp;
let a: Tenant;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
});
afterEach(async () => t.close());

/** POSTs `{customer_identity: identity}` with account A's app token. */
const post = (identity: unknown, token = a.accessToken) =>
  t.app.inject({ method: 'POST', url: URL, headers: bearer(token), payload: { customer_identity: identity } });

/** POSTs a raw body with the given headers. */
const postRaw = (payload: string | Buffer, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: URL, headers: { ...bearer(a.accessToken), ...headers }, payload });

async function upsert(identity: Record<string, unknown>, status: 200 | 201): Promise<CustomerIdentity> {
  const response = await post(identity);
  expect(response.statusCode, response.body).toBe(status);
  return response.json<CustomerIdentityResponse>().customer_identity;
}

/** Rows in the two tables, over every account. */
async function counts(): Promise<{ customers: number; identities: number }> {
  const count = async (table: 'customers' | 'customer_identities') =>
    Number(
      (
        await t.db.kysely
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { customers: await count('customers'), identities: await count('customer_identities') };
}

const customersOf = (accountId = a.accountId) => t.services.customers.list(accountId);

describe('POST /v1/customer_identities/create_or_update: the rules of spec 4.2', () => {
  it('rule 1: a new distinct_id creates an identity (201) in the spec shape', async () => {
    const response = await post({
      distinct_id: 'crm-1',
      email: 'jane@example.com',
      first_name: 'Jane',
      last_name: 'Doe',
      properties: { plan: 'gold', visits: 3 },
    });
    expect(response.statusCode).toBe(201);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = response.json<CustomerIdentityResponse>();
    expect(Object.keys(body)).toEqual(['customer_identity']);
    expect(body.customer_identity).toEqual({
      id: expect.any(Number),
      first_name: 'Jane',
      last_name: 'Doe',
      email: 'jane@example.com',
      distinct_id: 'crm-1',
      properties: { plan: 'gold', visits: 3 },
      customer_id: expect.any(Number),
    });
    expect(Object.keys(body.customer_identity).sort()).toEqual(
      ['customer_id', 'distinct_id', 'email', 'first_name', 'id', 'last_name', 'properties'].sort(),
    );
  });

  it('rule 4: the same distinct_id again is an update (200) of the same identity', async () => {
    const created = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com' }, 201);
    const updated = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com' }, 200);
    expect(updated.id).toBe(created.id);
    expect(updated.customer_id).toBe(created.customer_id);
    expect(await counts()).toEqual({ customers: 1, identities: 1 });
  });

  it('compares distinct_id exactly: case and spaces make another identity', async () => {
    const ids = new Set<number>();
    for (const distinctId of ['crm-1', 'CRM-1', ' crm-1', 'crm-1 ']) {
      ids.add((await upsert({ distinct_id: distinctId, email: 'jane@example.com' }, 201)).id);
    }
    expect(ids.size).toBe(4);
    expect(await counts()).toEqual({ customers: 1, identities: 4 });
  });

  it('rule 2: links to a customer created by the CLI, matching the email case-insensitively after trimming', async () => {
    const customer = await t.services.customers.create(a.accountId, {
      email: 'jane@example.com',
      first_name: 'Jane',
      last_name: 'Customer',
    });
    const identity = await upsert(
      { distinct_id: 'crm-1', email: '  JANE@Example.COM\t', first_name: 'J', last_name: 'Identity' },
      201,
    );
    expect(identity.customer_id).toBe(customer.id);
    // The identity stores the email as sent, trimmed; the customer keeps its own record.
    expect(identity.email).toBe('JANE@Example.COM');
    expect(await customersOf()).toEqual([customer]);
  });

  it('rule 2: links to a customer created by an earlier identity of the account', async () => {
    const first = await upsert({ distinct_id: 'shop-1', email: 'Jane@Example.com', first_name: 'Jane' }, 201);
    const second = await upsert({ distinct_id: 'crm-9', email: ' jane@example.COM ', first_name: 'Janet' }, 201);
    expect(second.id).not.toBe(first.id);
    expect(second.customer_id).toBe(first.customer_id);
    expect(await customersOf()).toEqual([
      { id: first.customer_id, email: 'Jane@Example.com', first_name: 'Jane', last_name: null },
    ]);
  });

  it('rule 3: with no matching customer, creates one from the email, first_name and last_name', async () => {
    await t.services.customers.create(a.accountId, { email: 'other@example.com' });
    const identity = await upsert(
      { distinct_id: 'crm-1', email: ' Jane@Example.com ', first_name: 'Jane', last_name: 'Doe' },
      201,
    );
    const customers = await customersOf();
    expect(customers).toHaveLength(2);
    expect(customers[1]).toEqual({
      id: identity.customer_id,
      email: 'Jane@Example.com',
      first_name: 'Jane',
      last_name: 'Doe',
    });
  });

  it('rule 3: a new customer without names has null names, and the identity too', async () => {
    const identity = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com' }, 201);
    expect(identity).toMatchObject({ first_name: null, last_name: null, properties: {} });
    expect(await customersOf()).toEqual([
      { id: identity.customer_id, email: 'jane@example.com', first_name: null, last_name: null },
    ]);
  });

  it('does not match customers of another account', async () => {
    const b = await createTenant(t.services, 'Shop B');
    const other = await t.services.customers.create(b.accountId, { email: 'jane@example.com' });
    const identity = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com' }, 201);
    expect(identity.customer_id).not.toBe(other.id);
    expect(await customersOf(b.accountId)).toEqual([other]);
  });

  it('rule 4: an update replaces the fields sent and keeps the others', async () => {
    await upsert(
      { distinct_id: 'crm-1', email: 'jane@example.com', first_name: 'Jane', last_name: 'Doe', properties: { a: 1 } },
      201,
    );
    const updated = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com', last_name: 'Smith' }, 200);
    expect(updated).toMatchObject({ first_name: 'Jane', last_name: 'Smith', properties: { a: 1 } });
  });

  it('rule 4: first_name or last_name null clears it', async () => {
    await upsert({ distinct_id: 'crm-1', email: 'jane@example.com', first_name: 'Jane', last_name: 'Doe' }, 201);
    const updated = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com', first_name: null }, 200);
    expect(updated).toMatchObject({ first_name: null, last_name: 'Doe' });
    const again = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com', last_name: null }, 200);
    expect(again).toMatchObject({ first_name: null, last_name: null });
  });

  it('rule 4: properties merge key by key; null removes a key; nested values are replaced whole', async () => {
    await upsert(
      {
        distinct_id: 'crm-1',
        email: 'jane@example.com',
        properties: { plan: 'gold', visits: 3, address: { city: 'Oslo', zip: '0150' }, tags: ['a'] },
      },
      201,
    );
    const updated = await upsert(
      {
        distinct_id: 'crm-1',
        email: 'jane@example.com',
        properties: { visits: 4, plan: null, address: { city: 'Bergen' }, vip: true, missing: null },
      },
      200,
    );
    expect(updated.properties).toEqual({ visits: 4, address: { city: 'Bergen' }, tags: ['a'], vip: true });
    const untouched = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com' }, 200);
    expect(untouched.properties).toEqual(updated.properties);
    const emptied = await upsert(
      {
        distinct_id: 'crm-1',
        email: 'jane@example.com',
        properties: { visits: null, address: null, tags: null, vip: null },
      },
      200,
    );
    expect(emptied.properties).toEqual({});
  });

  it('stores properties with scalar, array and falsy values faithfully; null keys are dropped on creation too', async () => {
    const properties = { zero: 0, empty: '', no: false, list: [1, 'two', null, { x: [] }], unicode: 'é😀\u2028' };
    const created = await upsert(
      { distinct_id: 'crm-1', email: 'jane@example.com', properties: { ...properties, gone: null } },
      201,
    );
    expect(created.properties).toEqual(properties);
    expect((await t.services.customerIdentities.listIdentities(a.accountId))[0]?.properties).toEqual(properties);
  });

  it('rule 5: an update with another email keeps the linked customer and changes no customer', async () => {
    const customer = await t.services.customers.create(a.accountId, {
      email: 'other@example.com',
      first_name: 'Other',
    });
    const created = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com', first_name: 'Jane' }, 201);
    const before = await customersOf();
    // Another email, even that of another existing customer, and new names.
    for (const email of ['new@example.com', 'OTHER@example.com']) {
      const updated = await upsert({ distinct_id: 'crm-1', email, first_name: 'Janet', last_name: 'X' }, 200);
      expect(updated).toMatchObject({ id: created.id, customer_id: created.customer_id, email, first_name: 'Janet' });
    }
    expect(created.customer_id).not.toBe(customer.id);
    expect(await customersOf()).toEqual(before);
    expect(await counts()).toEqual({ customers: 2, identities: 1 });
  });

  it('an identity created with an email keeps working as a match key for the customer, not its new email', async () => {
    const created = await upsert({ distinct_id: 'crm-1', email: 'jane@example.com' }, 201);
    await upsert({ distinct_id: 'crm-1', email: 'changed@example.com' }, 200);
    const byOldEmail = await upsert({ distinct_id: 'crm-2', email: 'jane@example.com' }, 201);
    expect(byOldEmail.customer_id).toBe(created.customer_id);
    const byNewEmail = await upsert({ distinct_id: 'crm-3', email: 'changed@example.com' }, 201);
    expect(byNewEmail.customer_id).not.toBe(created.customer_id);
  });
});

describe('POST /v1/customer_identities/create_or_update: validation', () => {
  const valid = { distinct_id: 'crm-1', email: 'jane@example.com' };

  /** Asserts `400 invalid_parameter` whose first detail names `field`, and that nothing was written. */
  async function expectInvalid(identity: unknown, field: string): Promise<void> {
    const before = await counts();
    const error = expectError(await post(identity), 'invalid_parameter');
    expect(error.details?.[0]?.field).toBe(field);
    expect(error.message).toContain(field);
    expect(await counts()).toEqual(before);
  }

  it('requires distinct_id and email', async () => {
    await expectInvalid({ email: 'jane@example.com' }, 'customer_identity.distinct_id');
    await expectInvalid({ distinct_id: 'crm-1' }, 'customer_identity.email');
    const error = expectError(await post({}), 'invalid_parameter');
    expect(error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'customer_identity.distinct_id',
      'customer_identity.email',
    ]);
  });

  it('bounds distinct_id to 1..255 characters', async () => {
    await upsert({ ...valid, distinct_id: 'd'.repeat(255) }, 201);
    await upsert({ ...valid, distinct_id: 'x' }, 201);
    await expectInvalid({ ...valid, distinct_id: 'd'.repeat(256) }, 'customer_identity.distinct_id');
    await expectInvalid({ ...valid, distinct_id: '' }, 'customer_identity.distinct_id');
  });

  it('counts characters, not bytes, in distinct_id and names', async () => {
    await upsert({ ...valid, distinct_id: 'é'.repeat(255), first_name: '😀'.repeat(255) }, 201);
    await expectInvalid({ ...valid, distinct_id: 'é'.repeat(256) }, 'customer_identity.distinct_id');
  });

  it('bounds email to 254 characters, after trimming', async () => {
    const email254 = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
    expect(email254).toHaveLength(254);
    await upsert({ ...valid, email: email254 }, 201);
    await upsert({ ...valid, distinct_id: 'crm-2', email: `  ${email254}  ` }, 201);
    await expectInvalid({ ...valid, distinct_id: 'crm-3', email: `${email254}d` }, 'customer_identity.email');
  });

  it('refuses an invalid email address, with or without surrounding spaces', async () => {
    for (const email of [
      '',
      '   ',
      'jane',
      'jane@',
      '@example.com',
      'jane@@example.com',
      'ja ne@example.com',
      ' jane ',
    ]) {
      await expectInvalid({ ...valid, email }, 'customer_identity.email');
    }
  });

  it('accepts an email with surrounding spaces and stores it trimmed', async () => {
    const created = await upsert({ ...valid, email: ' \t Jane@Example.com \n' }, 201);
    expect(created.email).toBe('Jane@Example.com');
  });

  it('bounds first_name and last_name to 255 characters, string or null', async () => {
    await upsert({ ...valid, first_name: 'f'.repeat(255), last_name: 'l'.repeat(255) }, 201);
    await upsert({ ...valid, first_name: null, last_name: null }, 200);
    await expectInvalid({ ...valid, first_name: 'f'.repeat(256) }, 'customer_identity.first_name');
    await expectInvalid({ ...valid, last_name: 'l'.repeat(256) }, 'customer_identity.last_name');
    await expectInvalid({ ...valid, first_name: 42 }, 'customer_identity.first_name');
    await expectInvalid({ ...valid, last_name: { a: 1 } }, 'customer_identity.last_name');
  });

  it('refuses wrong types without coercion', async () => {
    await expectInvalid({ ...valid, distinct_id: 123 }, 'customer_identity.distinct_id');
    await expectInvalid({ ...valid, distinct_id: null }, 'customer_identity.distinct_id');
    await expectInvalid({ ...valid, email: ['jane@example.com'] }, 'customer_identity.email');
    await expectInvalid({ ...valid, properties: 'plan=gold' }, 'customer_identity.properties');
    await expectInvalid({ ...valid, properties: ['gold'] }, 'customer_identity.properties');
    await expectInvalid({ ...valid, properties: null }, 'customer_identity.properties');
  });

  it('refuses the NUL character in strings (PostgreSQL cannot store it)', async () => {
    await expectInvalid({ ...valid, distinct_id: 'crm\u0000-1' }, 'customer_identity.distinct_id');
    await expectInvalid({ ...valid, first_name: 'Ja\u0000ne' }, 'customer_identity.first_name');
  });

  it('bounds properties to 16 KiB of compact JSON, counted in UTF-8 bytes', async () => {
    const ascii = { k: 'x'.repeat(16384 - '{"k":""}'.length) };
    expect(JSON.stringify(ascii)).toHaveLength(16384);
    await upsert({ ...valid, properties: ascii }, 201);
    await expectInvalid(
      { ...valid, distinct_id: 'crm-2', properties: { k: `${ascii.k}x` } },
      'customer_identity.properties',
    );
    // 'é' is 2 bytes in UTF-8: 8188 of them fill the 16376 bytes left.
    await upsert({ ...valid, distinct_id: 'crm-3', properties: { k: 'é'.repeat(8188) } }, 201);
    await expectInvalid(
      { ...valid, distinct_id: 'crm-4', properties: { k: 'é'.repeat(8189) } },
      'customer_identity.properties',
    );
  });

  it('refuses an update whose merged properties would pass 16 KiB, and changes nothing', async () => {
    const half = 'x'.repeat(9000);
    const created = await upsert({ ...valid, first_name: 'Jane', properties: { a: half } }, 201);
    const error = expectError(
      await post({ ...valid, first_name: 'Changed', properties: { b: half } }),
      'invalid_parameter',
    );
    expect(error.details[0].field).toBe('customer_identity.properties');
    expect(error.message).toMatch(/after merging/);
    expect(await t.services.customerIdentities.listIdentities(a.accountId)).toEqual([created]);
    // Replacing the key instead of adding one is fine.
    await upsert({ ...valid, properties: { a: null, b: half } }, 200);
  });

  it('bounds properties to 5 levels: the properties object is level 1, each nested object or array adds one', async () => {
    /** An object `levels` deep: nest(1) is {v: 1}. */
    const nest = (levels: number): Record<string, unknown> => (levels === 1 ? { v: 1 } : { a: nest(levels - 1) });
    await upsert({ ...valid, properties: nest(5) }, 201);
    await upsert({ ...valid, distinct_id: 'crm-2', properties: { list: [[[[1]]]] } }, 201);
    await upsert({ ...valid, distinct_id: 'crm-3', properties: { a: [{ b: [{}] }] } }, 201);
    await expectInvalid({ ...valid, distinct_id: 'crm-4', properties: nest(6) }, 'customer_identity.properties');
    await expectInvalid(
      { ...valid, distinct_id: 'crm-5', properties: { list: [[[[[1]]]]] } },
      'customer_identity.properties',
    );
    await expectInvalid(
      { ...valid, distinct_id: 'crm-6', properties: { a: [{ b: [{ c: [] }] }] } },
      'customer_identity.properties',
    );
    // Deep values are refused even when they only sit beside shallow ones, and on update.
    await expectInvalid({ ...valid, properties: { ok: 1, deep: nest(5) } }, 'customer_identity.properties');
  });

  it('answers 400, not 500, to hostile nesting that fills the body', async () => {
    const levels = 30_000;
    const deep = `{"a":${'['.repeat(levels)}${']'.repeat(levels)}}`;
    const body = `{"customer_identity":{"distinct_id":"crm-1","email":"jane@example.com","properties":${deep}}}`;
    expect(body.length).toBeLessThan(64 * 1024);
    const error = expectError(await postRaw(body, { 'content-type': 'application/json' }), 'invalid_parameter');
    expect(error.details[0].field).toBe('customer_identity.properties');
    expect(await counts()).toEqual({ customers: 0, identities: 0 });
  });

  it('answers 400, not 500, to prototype-poisoning keys, and writes nothing', async () => {
    for (const properties of ['{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"admin":true}}}']) {
      const body = `{"customer_identity":{"distinct_id":"crm-1","email":"jane@example.com","properties":${properties}}}`;
      const response = await postRaw(body, { 'content-type': 'application/json' });
      expect(response.statusCode).toBe(400);
      expectError(response, 'invalid_request');
    }
    expect(await counts()).toEqual({ customers: 0, identities: 0 });
  });

  it('refuses any other field inside customer_identity, naming it', async () => {
    await expectInvalid({ ...valid, nickname: 'JJ' }, 'customer_identity.nickname');
    await expectInvalid({ ...valid, id: 5 }, 'customer_identity.id');
    await expectInvalid({ ...valid, customer_id: 5 }, 'customer_identity.customer_id');
  });

  it('refuses an envelope that is not {customer_identity: {...}}: invalid_request', async () => {
    const send = (payload: unknown) =>
      t.app.inject({ method: 'POST', url: URL, headers: bearer(a.accessToken), payload: payload as object });
    expectError(await send({}), 'invalid_request');
    expectError(await send({ identity: valid }), 'invalid_request');
    expectError(await send({ customer_identity: valid, extra: 1 }), 'invalid_request');
    for (const notObject of ['crm-1', 42, null, [valid], true]) {
      expectError(await send({ customer_identity: notObject }), 'invalid_request');
    }
    for (const raw of ['[]', '"text"', '42', 'null']) {
      expectError(await postRaw(raw, { 'content-type': 'application/json' }), 'invalid_request');
    }
    expect(await counts()).toEqual({ customers: 0, identities: 0 });
  });

  it('answers malformed JSON with 400 invalid_request', async () => {
    for (const raw of ['{"customer_identity":', '{customer_identity: {}}', "{'a':1}", '{"a":1}}']) {
      expectError(await postRaw(raw, { 'content-type': 'application/json' }), 'invalid_request');
    }
  });

  it('answers an empty body with 400 invalid_request', async () => {
    expectError(await postRaw('', { 'content-type': 'application/json' }), 'invalid_request');
    expectError(await postRaw(''), 'invalid_request');
  });

  it('answers a body that is not application/json with 415', async () => {
    const json = JSON.stringify({ customer_identity: valid });
    expectError(await postRaw(json, { 'content-type': 'text/plain' }), 'unsupported_media_type');
    expectError(await postRaw(json, { 'content-type': 'application/x-www-form-urlencoded' }), 'unsupported_media_type');
    expect(await counts()).toEqual({ customers: 0, identities: 0 });
  });

  it('answers a body without Content-Type with 415', async () => {
    const request: InjectOptions = {
      method: 'POST',
      url: URL,
      headers: bearer(a.accessToken),
      payload: Buffer.from(JSON.stringify({ customer_identity: valid })),
    };
    expectError(await t.app.inject(request), 'unsupported_media_type');
  });

  it('answers a body over 64 KiB with 413, and one of exactly 64 KiB is read', async () => {
    const exact = (bytes: number) => {
      const body = JSON.stringify({ customer_identity: { ...valid, first_name: '' } });
      return body.replace('"first_name":""', `"first_name":"${'x'.repeat(bytes - body.length)}"`);
    };
    expect(exact(64 * 1024)).toHaveLength(64 * 1024);
    // Read, then refused for the name's length: the body limit itself is inclusive.
    expectError(await postRaw(exact(64 * 1024), { 'content-type': 'application/json' }), 'invalid_parameter');
    expectError(await postRaw(exact(64 * 1024 + 1), { 'content-type': 'application/json' }), 'payload_too_large');
    expect(await counts()).toEqual({ customers: 0, identities: 0 });
  });

  it('writes nothing for any rejected request, and leaves an existing identity unchanged', async () => {
    const created = await upsert({ ...valid, first_name: 'Jane', properties: { a: 1 } }, 201);
    const before = await counts();
    await post({ ...valid, first_name: 'X', nickname: 'JJ' });
    await post({ ...valid, distinct_id: 'crm-2', email: 'new@example.com', properties: { deep: [[[[[1]]]]] } });
    await post({ ...valid, first_name: 'X', properties: { a: 'x'.repeat(20_000) } });
    await post({ distinct_id: 'crm-3', email: 'bad' });
    await postRaw('{"customer_identity":{"distinct_id":"crm-4"', { 'content-type': 'application/json' });
    await t.app.inject({ method: 'POST', url: URL, headers: bearer(a.apiKey), payload: { customer_identity: valid } });
    expect(await counts()).toEqual(before);
    expect(await t.services.customerIdentities.listIdentities(a.accountId)).toEqual([created]);
  });
});

describe('POST /v1/customer_identities/create_or_update: OpenAPI', () => {
  it('documents the operation with its 200 and 201 bodies and its errors', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    const operation = doc.paths['/v1/customer_identities/create_or_update'].post;
    expect(operation).toMatchObject({
      operationId: 'createOrUpdateCustomerIdentity',
      tags: ['Customer identities'],
      // Access tokens only: an API key is refused (403 oauth_token_required).
      security: [{ oauth2: ['customer_identity:write'] }],
    });
    expect(Object.keys(operation.responses).sort()).toEqual(
      ['200', '201', '400', '401', '403', '413', '415', '429', '500', '503'].sort(),
    );
    const body = operation.responses['201'].content['application/json'].schema;
    expect(body.properties.customer_identity).toEqual({ $ref: '#/components/schemas/CustomerIdentity' });
    const identity = doc.components.schemas.CustomerIdentity;
    expect(Object.keys(identity.properties).sort()).toEqual(
      ['customer_id', 'distinct_id', 'email', 'first_name', 'id', 'last_name', 'properties'].sort(),
    );
    expect(operation.requestBody.content['application/json'].schema.properties.customer_identity.required).toEqual([
      'distinct_id',
      'email',
    ]);
  });
});
