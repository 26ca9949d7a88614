import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { engineState, program, rowCount, variableRule } from '../helpers/engine.js';

// Issue 27, item 17: the API reads its input strictly. Integer ids and integer query parameters
// are decimal digits only, query parameters a route does not declare are refused by name, a
// gzip-labelled body is not read as plain, and a JSON -0 amount is refused as "-0" is.

let t: TestApp;
let a: Tenant;
let customerId: number;
let transactionId: number;
let productId: number;
let endpointId: number;

interface Operation {
  method: 'GET' | 'POST';
  path: string;
  query: string[];
  /** Its `{id}` is an integer (some ids are strings: an event's `evt_…`). */
  integerId: boolean;
}

/** Every /v1 operation of the served OpenAPI document, with its query parameters. */
async function operations(): Promise<Operation[]> {
  const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
  const found: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { parameters?: unknown }>>)) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, operation] of Object.entries(item)) {
      if (method !== 'get' && method !== 'post') continue;
      const parameters = (operation.parameters ?? []) as { name: string; in: string; schema?: { type?: string } }[];
      const query = parameters.filter((p) => p.in === 'query').map((p) => p.name);
      const integerId = parameters.find((p) => p.in === 'path' && p.name === 'id')?.schema?.type === 'integer';
      found.push({ method: method.toUpperCase() as 'GET' | 'POST', path, query, integerId });
    }
  }
  return found;
}

/** A request with an API key: a JSON body for POST (a valid one where an id is under test). */
const send = (method: 'GET' | 'POST' | 'HEAD', url: string, body?: string, headers: Record<string, string> = {}) =>
  t.app.inject({
    method,
    url,
    // create_or_update takes an app's access token only; every other operation takes both.
    headers: {
      ...bearer(url.includes('/customer_identities/') ? a.accessToken : a.apiKey),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { payload: body }),
  });

// One app for the file (its tests only read, or are refused and write nothing); each test makes
// its own account, customer, transaction and products.
beforeAll(async () => {
  // Overload is not under test: on a busy machine a slow second would answer 503 instead.
  t = await createTestApp({ MAX_EVENT_LOOP_DELAY_MS: '0' });
});
afterAll(async () => t.close());

beforeEach(async () => {
  a = await createTenant(t.services);
  customerId = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  const credit = await send(
    'POST',
    '/v1/points_transactions',
    JSON.stringify({ points_transaction: { customer_id: customerId, points_change: 500 } }),
  );
  expect(credit.statusCode, credit.body).toBe(201);
  transactionId = credit.json().points_transaction.id;
  const made = await t.services.pointsProducts.create(a.accountId, [
    { exchange_type: 'fixed', points_price: 100, reward: { name: '$1 off' } },
    { exchange_type: 'fixed', points_price: 200, reward: { name: '$2 off' } },
  ]);
  productId = (made as { id: number }[])[0]!.id;
  const endpoint = await t.services.webhooks.create(
    { accountId: a.accountId, grantId: null, scopes: null },
    { url: 'https://example.com/hooks', enabled_events: ['*'] },
  );
  endpointId = endpoint.id;
});

/** The path of an operation with `{id}` set to `id`, and a body that would otherwise succeed. */
function aimedAt(operation: Operation, id: string): { url: string; body?: string } {
  const url = operation.path.replace('{id}', id);
  if (operation.method === 'GET') return { url };
  return { url, body: JSON.stringify({ customer_id: customerId }) };
}

describe('an integer path id is decimal digits only', () => {
  // Each of these was read as a number before: 0x10 as 16, 1e3 as 1000, the others as 1.
  const NOT_DECIMAL = [
    '0x10',
    '0x1',
    '%201',
    '1%20',
    '%20%201',
    '1e3',
    '1e0',
    '+1',
    '%2B1',
    '01',
    '001',
    '1.0',
    '1.',
    '0b1',
  ];

  it('refuses every non-decimal spelling with 400 invalid_parameter naming id, on every /v1 route with an id', async () => {
    const withId = (await operations()).filter((o) => o.path.includes('{id}') && o.integerId);
    // The document lists them all: a route added later is tested without editing this table.
    expect(withId.map((o) => `${o.method} ${o.path}`).sort()).toEqual(
      expect.arrayContaining([
        'GET /v1/customers/{id}',
        'GET /v1/points_products/{id}',
        'GET /v1/points_transactions/{id}',
        'POST /v1/points_products/{id}/purchase',
      ]),
    );
    const before = await engineState(t.db.kysely);
    const purchasesBefore = await rowCount(t.db.kysely, 'points_purchases');
    const ids: Record<string, number> = {
      '/v1/customers/{id}': customerId,
      '/v1/points_products/{id}': productId,
      '/v1/points_transactions/{id}': transactionId,
      '/v1/points_products/{id}/purchase': productId,
    };
    for (const operation of withId) {
      for (const id of NOT_DECIMAL) {
        const { url, body } = aimedAt(operation, id);
        const error = expectError(await send(operation.method, url, body), 'invalid_parameter');
        expect(error.details, `${operation.method} ${url}`).toEqual([
          { field: 'id', message: 'must be an integer written in decimal digits, such as 42' },
        ]);
      }
      // The same object by its decimal id is found (a purchase by a customer with the points).
      const id = ids[operation.path];
      if (id !== undefined && operation.method === 'GET') {
        const found = await send('GET', aimedAt(operation, String(id)).url);
        expect(found.statusCode, found.body).toBe(200);
      }
    }
    expect(await engineState(t.db.kysely)).toEqual(before);
    expect(await rowCount(t.db.kysely, 'points_purchases')).toBe(purchasesBefore);
  });

  it('keeps the answers of decimal ids: 404 for an unknown one, 400 for 0, -1 and one past the largest', async () => {
    expectError(await send('GET', `/v1/customers/${customerId + 1000}`), 'not_found');
    for (const id of ['0', '-1', '9007199254740992', 'abc']) {
      const error = expectError(await send('GET', `/v1/customers/${id}`), 'invalid_parameter');
      expect(error.details[0].field).toBe('id');
    }
    const bought = await send(
      'POST',
      `/v1/points_products/${productId}/purchase`,
      JSON.stringify({ customer_id: customerId }),
    );
    expect(bought.statusCode, bought.body).toBe(201);
  });
});

describe('an id in a query parameter is decimal digits only', () => {
  // `limit` has its own rule (http/pagination.ts, test/earning-rules): a count, `007` allowed.
  it('refuses customer_id=0x10 and its kin by name', async () => {
    for (const [path, name, value] of [
      ['/v1/points_transactions', 'customer_id', `0x${customerId.toString(16)}`],
      ['/v1/points_transactions', 'customer_id', `${customerId}.0`],
      ['/v1/points_transactions', 'customer_id', `0${customerId}`],
      ['/v1/reward_fulfillments', 'customer_id', `%20${customerId}`],
      ['/v1/reward_fulfillments', 'customer_id', `${customerId}e0`],
    ] as const) {
      const error = expectError(await send('GET', `${path}?${name}=${value}`), 'invalid_parameter');
      expect(error.details, `${path}?${name}=${value}`).toEqual([{ field: name, message: expect.any(String) }]);
    }
    const listed = await send('GET', `/v1/points_transactions?customer_id=${customerId}&limit=10`);
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json().points_transactions).toHaveLength(1);
  });
});

describe('a query parameter the operation does not declare', () => {
  it('is refused on every /v1 list, naming it: page/page_size (pointing to cursor), email[], foo', async () => {
    const lists = (await operations()).filter((o) => o.method === 'GET' && o.query.includes('cursor'));
    expect(lists.map((o) => o.path)).toEqual(
      expect.arrayContaining([
        '/v1/customers',
        '/v1/earning_rules',
        '/v1/points_products',
        '/v1/points_transactions',
        '/v1/reward_fulfillments',
      ]),
    );
    for (const listed of lists) {
      // A list under a resource (an endpoint's deliveries) is asked of a real one.
      const path = listed.path.replace('{id}', String(endpointId));
      let error = expectError(await send('GET', `${path}?page=2&page_size=1`), 'invalid_parameter');
      expect(error.details.map((d: { field: string }) => d.field)).toEqual(['page', 'page_size']);
      expect(error.message).toContain('`cursor`');
      expect(error.message).toContain('`limit`');
      error = expectError(await send('GET', `${path}?email[]=a`), 'invalid_parameter');
      expect(error.details.map((d: { field: string }) => d.field)).toEqual(['email[]']);
      error = expectError(await send('GET', `${path}?limit=1&foo=1`), 'invalid_parameter');
      expect(error.details).toEqual([{ field: 'foo', message: expect.any(String) }]);
      expect(error.message).toContain('foo');
      // HEAD is the same route: the same refusal, without a body.
      expect((await send('HEAD', `${path}?foo=1`)).statusCode).toBe(400);
      // The declared parameters still work.
      const page = await send('GET', `${path}?limit=1`);
      expect(page.statusCode, `${path}: ${page.body}`).toBe(200);
    }
  });

  it("answers Smile's page-number paging with 400 instead of the same first page forever", async () => {
    const first = await send('GET', '/v1/points_products?limit=1');
    expect(first.json().points_products).toHaveLength(1);
    const error = expectError(await send('GET', '/v1/points_products?page=2&page_size=1'), 'invalid_parameter');
    expect(error.message).toMatch(/page, page_size.*`cursor`/);
    // What the message points to: the second page by its cursor.
    const second = await send('GET', `/v1/points_products?limit=1&cursor=${first.json().metadata.next_cursor}`);
    expect(second.json().points_products[0].id).not.toBe(first.json().points_products[0].id);
  });

  it('refuses email[]=a rather than listing every customer, naming the parameter to send instead', async () => {
    await t.services.customers.create(a.accountId, { email: 'john@example.com' });
    const error = expectError(await send('GET', '/v1/customers?email[]=jane@example.com'), 'invalid_parameter');
    expect(error.details).toEqual([{ field: 'email[]', message: expect.stringContaining('`email`') }]);
    const filtered = await send('GET', '/v1/customers?email=jane@example.com');
    expect(filtered.json().customers).toHaveLength(1);
  });

  it('is refused on every other /v1 operation too, and on writes', async () => {
    const others = (await operations()).filter((o) => !o.query.includes('cursor'));
    expect(others.length).toBeGreaterThan(5);
    for (const operation of others) {
      const { url, body } = aimedAt(operation, String(productId));
      const error = expectError(await send(operation.method, `${url}?foo=1&bar=2`, body), 'invalid_parameter');
      expect(
        error.details.map((d: { field: string }) => d.field),
        `${operation.method} ${url}`,
      ).toEqual(['foo', 'bar']);
    }
  });

  it('is documented: every /v1 operation has a 400 response in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { responses: object }>>)) {
      if (!path.startsWith('/v1/')) continue;
      for (const [method, operation] of Object.entries(item)) {
        expect(Object.keys(operation.responses), `${method} ${path}`).toContain('400');
      }
    }
  });

  it('is ignored by the OAuth authorization endpoint, as RFC 6749 3.1 requires', async () => {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: a.clientId,
      redirect_uri: 'https://app.example/callback',
      state: 'xyz',
      page: '2',
      foo: '1',
    });
    const page = await t.app.inject({ method: 'GET', url: `/oauth2/authorize?${query}` });
    expect(page.statusCode, page.body).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
  });
});

describe('a body with a Content-Encoding', () => {
  const writes = () =>
    [
      [
        '/v1/customer_identities/create_or_update',
        { customer_identity: { distinct_id: 'crm-1', email: 'x@example.com' } },
      ],
      ['/v1/activities', { activity: { token: 'activity_unknown', customer_id: customerId } }],
      ['/v1/points_transactions', { points_transaction: { customer_id: customerId, points_change: 5 } }],
      [`/v1/points_products/${productId}/purchase`, { customer_id: customerId }],
    ] as const;

  it('is refused with 415 and Accept-Encoding: identity when the coding is not identity, nothing written', async () => {
    const before = await engineState(t.db.kysely);
    for (const [url, body] of writes()) {
      for (const coding of ['gzip', 'br', 'deflate', 'GZIP', 'gzip, identity', 'x-unknown']) {
        const key = url.includes('customer_identities') ? a.accessToken : a.apiKey;
        const response = await t.app.inject({
          method: 'POST',
          url,
          headers: { ...bearer(key), 'content-type': 'application/json', 'content-encoding': coding },
          payload: JSON.stringify(body),
        });
        const error = expectError(response, 'unsupported_media_type');
        expect(error.message, `${url} ${coding}`).toContain('Content-Encoding');
        expect(response.headers['accept-encoding']).toBe('identity');
      }
    }
    expect(await engineState(t.db.kysely)).toEqual(before);
  });

  it('is read when the coding is identity', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/points_transactions',
      headers: { ...bearer(a.apiKey), 'content-type': 'application/json', 'content-encoding': 'identity' },
      payload: JSON.stringify({ points_transaction: { customer_id: customerId, points_change: 5 } }),
    });
    expect(response.statusCode, response.body).toBe(201);
  });

  it('does not concern a request without a body', async () => {
    const response = await send('GET', `/v1/customers/${customerId}`, undefined, { 'content-encoding': 'gzip' });
    expect(response.statusCode, response.body).toBe(200);
  });
});

describe('a JSON -0', () => {
  it('is refused as an activity amount, as the string "-0" is', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [variableRule('Order', 1, 1, tk)]);
    const before = await engineState(t.db.kysely);
    for (const amount of ['"-0"', '-0', '-0.0', '-0e5', '-0.0000']) {
      const body = `{"activity":{"token":"${token}","customer_id":${customerId},"properties":{"amount":${amount}}}}`;
      const error = expectError(await send('POST', '/v1/activities', body), 'invalid_parameter');
      expect(error.details, amount).toEqual([{ field: 'activity.properties.amount', message: 'must be 0 or more' }]);
    }
    expect(await engineState(t.db.kysely)).toEqual(before);
    // 0 itself is an amount: it credits nothing, and the activity is recorded.
    const zero = await send(
      'POST',
      '/v1/activities',
      JSON.stringify({ activity: { token, customer_id: customerId, properties: { amount: 0 } } }),
    );
    expect(zero.statusCode, zero.body).toBe(201);
  });

  it('is refused wherever the API expects an id or a count, as "-0" is', async () => {
    for (const [url, body, field] of [
      [
        '/v1/points_transactions',
        '{"points_transaction":{"customer_id":-0,"points_change":5}}',
        'points_transaction.customer_id',
      ],
      [
        '/v1/points_transactions',
        `{"points_transaction":{"customer_id":${customerId},"points_change":-0}}`,
        'points_transaction.points_change',
      ],
      [`/v1/points_products/${productId}/purchase`, '{"customer_id":-0}', 'customer_id'],
      ['/v1/activities', '{"activity":{"token":"t","customer_id":-0.0}}', 'activity.customer_id'],
    ] as const) {
      const error = expectError(await send('POST', url, body), 'invalid_parameter');
      expect(error.details[0].field, body).toBe(field);
    }
  });
});

describe('a NUL character in a parameter', () => {
  // PostgreSQL cannot hold NUL in text: such a search was a 500 there and an empty list on SQLite.
  it('is refused with 400 invalid_parameter naming it, in every query parameter of every /v1 GET', async () => {
    const gets = (await operations()).filter((o) => o.method === 'GET' && o.query.length > 0);
    expect(gets.map((o) => o.path)).toEqual(
      expect.arrayContaining(['/v1/customers', '/v1/referrals', '/v1/reward_fulfillments', '/v1/events']),
    );
    for (const operation of gets) {
      const path = operation.path.replace('{id}', String(endpointId));
      for (const name of operation.query) {
        const url = `${path}?${name}=a%00b`;
        const error = expectError(await send('GET', url), 'invalid_parameter');
        expect(error.details, url).toEqual([{ field: name, message: 'must not contain a NUL character (%00)' }]);
      }
    }
  });

  it('is refused in the searches that reached the database, and in a string path id', async () => {
    for (const [url, field] of [
      ['/v1/customers?email=a%00@x.com', 'email'],
      ['/v1/referrals?receiver_customer_email=%00', 'receiver_customer_email'],
      ['/v1/reward_fulfillments?code=A%00B', 'code'],
      ['/v1/events/evt_%00', 'id'],
    ] as const) {
      const error = expectError(await send('GET', url), 'invalid_parameter');
      expect(error.details, url).toEqual([{ field, message: expect.stringContaining('NUL') }]);
    }
    // The same searches without the NUL answer as before.
    const found = await send('GET', '/v1/customers?email=jane@example.com');
    expect(found.statusCode, found.body).toBe(200);
    expect(found.json().customers).toHaveLength(1);
  });
});

describe('a body sent to an operation that takes none', () => {
  it('is refused with 400 invalid_parameter naming its fields on every such /v1 operation, writing nothing', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    const bodiless: { method: 'POST' | 'PATCH' | 'DELETE'; path: string }[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { requestBody?: unknown }>>)) {
      for (const [method, operation] of Object.entries(item)) {
        if (['post', 'patch', 'delete'].includes(method) && path.startsWith('/v1/') && !operation.requestBody) {
          bodiless.push({ method: method.toUpperCase() as 'POST' | 'PATCH' | 'DELETE', path });
        }
      }
    }
    expect(bodiless.map((o) => `${o.method} ${o.path}`)).toEqual(
      expect.arrayContaining([
        'POST /v1/reward_fulfillments/{id}/cancel',
        'DELETE /v1/webhook_endpoints/{id}',
        'POST /v1/webhook_endpoints/{id}/rotate_secret',
      ]),
    );
    const before = await engineState(t.db.kysely);
    for (const { method, path } of bodiless) {
      const url = path.replace('{id}', String(path.includes('webhook') ? endpointId : transactionId));
      for (const [payload, fields] of [
        ['{"reason":"x"}', ['reason']],
        ['[1]', ['body']],
        ['"x"', ['body']],
      ] as const) {
        const reply = await t.app.inject({
          method,
          url,
          headers: { ...bearer(a.apiKey), 'content-type': 'application/json' },
          payload,
        });
        const error = expectError(reply, 'invalid_parameter');
        expect(
          error.details.map((d: { field: string }) => d.field),
          `${method} ${url} ${payload}`,
        ).toEqual(fields);
      }
    }
    expect(await engineState(t.db.kysely)).toEqual(before);
    const endpoint = await t.app.inject({
      method: 'GET',
      url: `/v1/webhook_endpoints/${endpointId}`,
      headers: bearer(a.apiKey),
    });
    expect(endpoint.statusCode, endpoint.body).toBe(200);
  });
});
