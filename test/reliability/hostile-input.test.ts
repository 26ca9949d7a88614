import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/errors.js';
import type { Db } from '../../src/storage/db.js';
import { createTenant, createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { withServices } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import {
  CREATE_OR_UPDATE,
  changedTables,
  checkContractError,
  checksum,
  NoResponse,
  openStore,
  parseRawReplies,
  type Reply,
  rawExchange,
  Servers,
  send,
  sendJson,
  tally,
} from './support.js';

// Random requests to every route of a real server process, over real sockets: random methods,
// paths, query strings, headers, bodies and credentials (valid ones often, so requests get past
// authentication into validation). Whatever arrives: never a 5xx, never a dropped connection,
// every error in the contract's shape, and nothing stored changes unless the request succeeded.

const RUNS = Number(process.env.HOSTILE_RUNS ?? 500);

const ROUTES = [
  '/v1/referral_settings',
  CREATE_OR_UPDATE,
  '/v1/earning_rules',
  '/v1/activities',
  '/v1/points_transactions',
  '/v1/points_transactions/1',
  '/v1/customers',
  '/v1/customers/1',
  '/v1/vip_tiers',
  '/v1/points_settings',
  '/v1/points_products',
  '/v1/points_products/1',
  '/v1/points_products/1/purchase',
  '/v1/reward_fulfillments',
  '/healthz',
  '/readyz',
  '/metrics',
  '/v1/openapi.json',
] as const;

interface Fixture {
  a: Tenant;
  b: Tenant;
  weakKey: string;
  revokedKey: string;
  rulesOf: Map<number, Set<number>>;
  /** Account A's activity type, bound to a fixed and a variable rule. */
  activityToken: string;
  /** Account A's customers. */
  customerIds: number[];
}

interface HostileRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

/** Printable header-safe text (Node's client refuses control characters in header values). */
const headerText = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });

const anyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '\ud800', 'é', '💥', 'x'.repeat(256), 'x'.repeat(300)),
);
const anyJson = fc.jsonValue({ maxDepth: 3 });
const fieldValue = fc.oneof(anyString, anyJson, fc.constant(null), fc.integer(), fc.boolean());

/**
 * A create_or_update body: valid, or valid with one to three parts broken (a field of the wrong
 * type, length or format, an unknown field, a wrapper that is not an object).
 */
function identityBody(): fc.Arbitrary<unknown> {
  const valid = fc.record(
    {
      distinct_id: fc.string({ minLength: 1, maxLength: 30 }),
      email: fc.emailAddress(),
      first_name: fc.oneof(fc.string({ maxLength: 20 }), fc.constant(null)),
      last_name: fc.oneof(fc.string({ maxLength: 20 }), fc.constant(null)),
      properties: fc.dictionary(fc.string({ maxLength: 10 }), fc.oneof(anyJson, fc.constant(null)), { maxKeys: 4 }),
    },
    { requiredKeys: ['distinct_id', 'email'] },
  );
  const breakage = fc.oneof(
    fc.record({ distinct_id: fc.oneof(fieldValue, fc.constantFrom('', 'a\u0000b', 'x'.repeat(256))) }),
    fc.record({
      email: fc.oneof(
        fc.constantFrom(
          'no-at-sign',
          '@',
          'a@b',
          ' ',
          `${'x'.repeat(250)}@example.com`,
          'a@b.c\u0000',
          'Jane@Example.com',
        ),
        fieldValue,
      ),
    }),
    fc.record({ first_name: fieldValue }),
    fc.record({ last_name: fc.oneof(fieldValue, fc.constant('x'.repeat(256))) }),
    fc.record({
      properties: fc.oneof(
        fieldValue,
        fc.constantFrom(
          { constructor: 1, toString: 'x', hasOwnProperty: null },
          { big: 'x'.repeat(17 * 1024) },
          { a: { b: { c: { d: { e: { f: 1 } } } } } },
          { a: [[[[[1]]]]] },
        ),
      ),
    }),
    fc.record({ id: fc.integer(), customer_id: fc.integer(), unknown: fieldValue }, { requiredKeys: [] }),
    fc.constantFrom({ distinct_id: undefined }, { email: undefined }),
  );
  const identity = fc.oneof(
    { weight: 3, arbitrary: valid },
    {
      weight: 5,
      arbitrary: fc
        .tuple(valid, fc.array(breakage, { minLength: 1, maxLength: 3 }))
        .map(([base, broken]) => Object.assign({}, base, ...broken)),
    },
  );
  return fc.oneof(
    { weight: 8, arbitrary: identity.map((customer_identity) => ({ customer_identity })) },
    {
      weight: 1,
      arbitrary: fc.tuple(identity, anyJson).map(([customer_identity, extra]) => ({ customer_identity, extra })),
    },
    { weight: 1, arbitrary: fieldValue.map((customer_identity) => ({ customer_identity })) },
  );
}

/** A POST /v1/activities body for account A: valid, or with parts broken. */
function activityBody(fixture: Fixture): fc.Arbitrary<unknown> {
  const amount = fc.oneof(
    fc.double({ min: 0, max: 1e6, noNaN: true }),
    fc.constantFrom('25.50', '0.29', '-1', '1e3', '1.00001', '', 'x', 10_000_000_001, null, {}, []),
  );
  const valid = fc.record(
    {
      token: fc.constantFrom(fixture.activityToken, 'activity_unknown'),
      customer_id: fc.constantFrom(...fixture.customerIds, 999_999),
      distinct_id: fc.string({ minLength: 1, maxLength: 12 }),
      properties: fc.record({ amount }, { requiredKeys: [] }),
      created_on_origin_at: fc.constantFrom(
        '2025-01-31T12:00:00Z',
        '2025-02-29T00:00:00Z',
        '2999-01-01T00:00:00Z',
        'x',
      ),
    },
    { requiredKeys: ['token'] },
  );
  const breakage = fc.oneof(
    fc.record({ customer_email: fc.oneof(fc.emailAddress(), fieldValue) }),
    fc.record({ token: fieldValue }),
    fc.record({ distinct_id: fieldValue }),
    fc.record({ properties: fieldValue }),
    fc.record({ unknown: fieldValue }),
  );
  return fc
    .tuple(valid, fc.array(breakage, { maxLength: 2 }))
    .map(([base, broken]) => ({ activity: Object.assign({}, base, ...broken) }));
}

/** A POST /v1/points_transactions body for account A: valid, or with parts broken. */
function pointsTransactionBody(fixture: Fixture): fc.Arbitrary<unknown> {
  return fc
    .record(
      {
        customer_id: fc.oneof(fc.constantFrom(...fixture.customerIds, 999_999), fieldValue),
        points_change: fc.oneof(fc.integer({ min: -50, max: 50 }), fc.constantFrom(0, 1.5, 2e9, '5'), fieldValue),
        description: fc.oneof(fc.string({ maxLength: 20 }), fieldValue),
        internal_note: fc.oneof(fc.string({ maxLength: 20 }), fieldValue),
      },
      { requiredKeys: [] },
    )
    .map((points_transaction) => ({ points_transaction }));
}

/** Raw bodies that are not JSON, or JSON meant to hurt. */
const rawBody = fc.oneof(
  fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  fc
    .constantFrom(
      '',
      'null',
      '[]',
      '{}',
      '"text"',
      '{"customer_identity":',
      '{"__proto__": {"polluted": true}}',
      '{"constructor": {"prototype": {"polluted": true}}}',
      '{"customer_identity": {"__proto__": {"distinct_id": "x"}}}',
      `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
      `{"customer_identity": {"distinct_id": "deep", "email": "d@example.com", "properties": {"a": ${'['.repeat(10_000)}${']'.repeat(10_000)}}}}`,
      `{"customer_identity": {"distinct_id": "x", "email": "x@example.com", "properties": {"n": 1e400}}}`,
      '\ufeff{"customer_identity": {"distinct_id": "bom", "email": "bom@example.com"}}',
      `{"pad": "${'x'.repeat(64 * 1024)}"}`,
      `{"pad": "${'x'.repeat(64 * 1024 - 12)}"}`,
    )
    .map((s) => Buffer.from(s)),
  fc
    .constantFrom('utf16le', 'latin1')
    .map((encoding) =>
      Buffer.from('{"customer_identity": {"distinct_id": "é", "email": "e@example.com"}}', encoding as BufferEncoding),
    ),
);

function hostileRequests(fixture: Fixture, cursors: string[]): fc.Arbitrary<HostileRequest> {
  const { a, b } = fixture;
  const method = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom('GET', 'POST') },
    { weight: 2, arbitrary: fc.constantFrom('HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS') },
    { weight: 1, arbitrary: fc.constantFrom('TRACE', 'PROPFIND', 'SEARCH', 'QUERY', 'LOCK', 'PURGE', 'M-SEARCH') },
  );
  const route = fc.constantFrom(...ROUTES);
  const path = fc.oneof(
    { weight: 8, arbitrary: route },
    {
      weight: 2,
      arbitrary: fc
        .tuple(route, fc.constantFrom('/', '//', '/..', '/.', '/x', '%00', '%2f', ';x=1', '/%ZZ', '#f'))
        .map(([r, suffix]) => r + suffix),
    },
    { weight: 1, arbitrary: route.map((r) => r.toUpperCase()) },
    { weight: 1, arbitrary: route.map((r) => `/${r.slice(1).replace('_', '%5F')}`) },
    { weight: 1, arbitrary: route.map((r) => `/v1/x/..${r.slice(3)}`) },
    { weight: 2, arbitrary: fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)) },
    { weight: 1, arbitrary: fc.webSegment().map((s) => `/v1/${s}`) },
    { weight: 1, arbitrary: fc.constantFrom('/', '/v1', '/v1/', '*', `/${'a'.repeat(4000)}`, '/v1/earning_rules/1') },
  );
  const cursor = fc.oneof(
    fc.constantFrom(...cursors),
    fc
      .tuple(fc.constantFrom(...cursors), fc.nat(66), fc.constantFrom('A', 'z', '-', '_', '0'))
      .map(([c, i, ch]) => c.slice(0, i) + ch + c.slice(i + 1)),
    fc.constantFrom(...cursors).map((c) => c.slice(1)),
    fc.base64String({ minLength: 64, maxLength: 72 }),
    anyString,
  );
  const limit = fc.oneof(
    fc.integer({ min: -5, max: 300 }).map(String),
    fc.constantFrom('', ' 5', '5 ', '1e2', '0x10', '1.5', '01', '+3', '-0', '9'.repeat(30), 'NaN', 'Infinity', 'null'),
    fc.constantFrom('%FF%FE', '%', '%G1', '5%00', '%E2%82').map((raw) => ({ raw })),
    anyString,
  );
  const param = fc.oneof(
    fc.tuple(fc.constant('limit'), limit),
    fc.tuple(fc.constant('cursor'), cursor),
    fc.tuple(fc.constantFrom('limit[]', 'cursor[]', '__proto__', 'constructor', 'Limit', 'x', ''), anyString),
  );
  // Most requests without a query: every /v1 route refuses a parameter it does not take (issue 27),
  // so random ones mostly test that refusal, and too few would reach validation and success.
  const query = fc.oneof(
    { weight: 8, arbitrary: fc.constant('') },
    {
      weight: 4,
      arbitrary: fc
        .array(param, { minLength: 1, maxLength: 4 })
        .map((pairs) => `?${pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&')}`),
    },
    { weight: 1, arbitrary: fc.webQueryParameters().map((q) => `?${q}`) },
    { weight: 1, arbitrary: fc.constantFrom('?', '??', '?&&', '?limit', '?limit=1&limit=2', '?cursor=&limit=') },
  );
  const token = fc.oneof(
    { weight: 3, arbitrary: fc.constant(a.accessToken) },
    { weight: 2, arbitrary: fc.constant(a.apiKey) },
    { weight: 1, arbitrary: fc.constantFrom(b.accessToken, b.apiKey, fixture.weakKey, fixture.revokedKey) },
    { weight: 1, arbitrary: headerText(60) },
  );
  const authorization = fc.oneof(
    { weight: 8, arbitrary: token.map((t) => `Bearer ${t}`) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        token.map((t) => `bearer   ${t}   `),
        token.map((t) => `Bearer\t${t}`),
        token.map((t) => `Bearer ${t}${t}`),
        token.map((t) => `Bearer ${t.slice(0, -1)}`),
        token.map((t) => `Basic ${Buffer.from(`${t}:`).toString('base64')}`),
        fc.constantFrom('Bearer', 'Bearer ', '', ' ', `Bearer ${'a'.repeat(300)}`, 'Bearer api_', 'Bearer oa2_'),
        headerText(80),
      ),
    },
  );
  const contentType = fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    { weight: 2, arbitrary: fc.constant(undefined) },
    {
      weight: 3,
      arbitrary: fc.oneof(
        fc.constantFrom(
          'application/json; charset=utf-8',
          'application/json; charset=utf-16',
          'APPLICATION/JSON',
          'application/json;;;',
          'application/jsonx',
          'application/vnd.api+json',
          'text/plain',
          'text/json',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          '',
          ';',
          '*/*',
        ),
        headerText(40),
      ),
    },
  );
  const extraHeaders = fc.dictionary(
    fc.oneof(
      fc.constantFrom(
        'x-request-id',
        'x-forwarded-proto',
        'x-forwarded-for',
        'forwarded',
        'accept',
        'accept-encoding',
        'content-encoding',
        'cookie',
        'expect',
        'origin',
        'x-http-method-override',
        'if-none-match',
        'range',
      ),
      fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/),
    ),
    fc.oneof(
      headerText(60),
      fc.constantFrom('gzip', 'br', 'http', 'https', '127.0.0.1', '100-continue', 'PUT', 'bytes=0-1', 'a'.repeat(200)),
    ),
    { maxKeys: 3 },
  );
  const framing = new Set(['content-length', 'transfer-encoding', 'host', 'connection', 'upgrade', 'te', 'trailer']);
  const body = fc.oneof(
    { weight: 2, arbitrary: fc.constant(null) },
    { weight: 5, arbitrary: identityBody().map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
    { weight: 1, arbitrary: anyJson.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
    { weight: 2, arbitrary: rawBody },
  );
  // Half the cases aim at a route with its own method (so they reach validation and the
  // database); the rest combine any method with any path.
  const json = (arbitrary: fc.Arbitrary<unknown>) => arbitrary.map((v) => Buffer.from(JSON.stringify(v) ?? 'null'));
  const aimed = fc.oneof(
    fc.record({
      method: fc.constant('GET'),
      path: fc.constantFrom(
        '/v1/referral_settings',
        '/v1/earning_rules',
        '/v1/customers',
        '/v1/customers/1',
        '/v1/points_transactions',
        '/v1/points_transactions/1',
        '/v1/vip_tiers',
        '/v1/points_settings',
        '/v1/points_products',
        '/v1/points_products/1',
        '/v1/reward_fulfillments',
      ),
      body: fc.constant(null),
    }),
    fc.record({ method: fc.constant('POST'), path: fc.constant(CREATE_OR_UPDATE), body }),
    fc.record({
      method: fc.constant('POST'),
      path: fc.constant('/v1/activities'),
      body: fc.oneof({ weight: 4, arbitrary: json(activityBody(fixture)) }, { weight: 1, arbitrary: body }),
    }),
    fc.record({
      method: fc.constant('POST'),
      path: fc.constant('/v1/points_products/1/purchase'),
      body: fc.oneof(
        {
          weight: 4,
          arbitrary: json(
            fc.record(
              {
                customer_id: fc.oneof(fc.constantFrom(...fixture.customerIds), fieldValue),
                points_to_spend: fieldValue,
              },
              { requiredKeys: [] },
            ),
          ),
        },
        { weight: 1, arbitrary: body },
      ),
    }),
    fc.record({
      method: fc.constant('POST'),
      path: fc.constant('/v1/points_transactions'),
      body: fc.oneof({ weight: 4, arbitrary: json(pointsTransactionBody(fixture)) }, { weight: 1, arbitrary: body }),
    }),
  );
  const target = fc.oneof(aimed, fc.record({ method, path, body }));
  return fc
    .record({ target, query, authorization, contentType, extraHeaders })
    .map(({ target: { method, path, body }, query, authorization, contentType, extraHeaders }) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(extraHeaders)) if (!framing.has(name)) headers[name] = value;
      // Node itself answers any other expectation with 417 (see the malformed-HTTP cases).
      if (headers.expect !== undefined) headers.expect = '100-continue';
      if (authorization !== undefined) headers.authorization = authorization;
      if (contentType !== undefined) headers['content-type'] = contentType;
      // Always framed by length: Node's client would otherwise send a GET body unframed.
      if (body !== null) headers['content-length'] = String(body.length);
      return { method, path: path.includes('?') || path === '*' ? path : path + query, headers, body };
    });
}

/** The account a bearer header authenticates, if it is one of the fixture's good credentials. */
function accountOf(fixture: Fixture, authorization: string | undefined): number | null {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  const token = match?.[1];
  if (token === fixture.a.apiKey || token === fixture.a.accessToken || token === fixture.weakKey) {
    return fixture.a.accountId;
  }
  if (token === fixture.b.apiKey || token === fixture.b.accessToken) return fixture.b.accountId;
  return null;
}

/** Percent-encodes the UTF-8 bytes of `text` (lone surrogates included), or passes `{raw}` as is. */
function percentEncode(text: string | { raw: string }): string {
  if (typeof text !== 'string') return text.raw;
  return [...Buffer.from(text)]
    .map((byte) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`,
    )
    .join('');
}

function answersWrite(reply: Reply): boolean {
  try {
    const body = JSON.parse(reply.body);
    return (
      typeof body.customer_identity?.distinct_id === 'string' ||
      typeof body.activity?.token === 'string' ||
      typeof body.points_transaction?.points_change === 'number' ||
      typeof body.points_purchase?.reward_fulfillment?.code === 'string'
    );
  } catch {
    return false;
  }
}

const describeRequest = (r: HostileRequest) =>
  `${r.method} ${r.path.slice(0, 200)} ${JSON.stringify(r.headers).slice(0, 300)} body=${r.body === null ? 'none' : JSON.stringify(r.body.toString().slice(0, 200))}`;

describe(`hostile input against a real server process (${testEngine})`, () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let fixture: Fixture;
  let server: ServerProcess;
  let store: Db;
  let cursors: string[];

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    fixture = await withServices(database.url, async (services) => {
      const a = await createTenant(services, 'Shop A');
      const b = await createTenant(services, 'Shop B');
      await services.referralSettings.set(a.accountId, referralSettingsFixture);
      const rule = {
        image_url: 'https://cdn.example/rule.png',
        reward: { type: 'points' },
        reward_value: { type: 'fixed', fixed: { value: 10 } },
      };
      const rulesOf = new Map<number, Set<number>>();
      for (const [tenant, count] of [
        [a, 7],
        [b, 3],
      ] as const) {
        const created = await services.earningRules.create(
          tenant.accountId,
          Array.from({ length: count }, (_, i) => ({ ...rule, name: `Rule ${i}`, enabled: i !== 1 })),
        );
        const enabled = (created as { id: number; enabled: boolean }[]).filter((r) => r.enabled).map((r) => r.id);
        rulesOf.set(tenant.accountId, new Set(enabled));
      }
      for (let i = 0; i < 3; i++) {
        await services.customerIdentities.createOrUpdate(a.accountId, {
          distinct_id: `seed-${i}`,
          email: `seed${i}@example.com`,
          properties: { i },
        });
      }
      const weak = await services.auth.createApiKey(a.accountId, ['earning_rule:read']);
      const revoked = await services.auth.createApiKey(a.accountId);
      await services.auth.revokeApiKey(revoked.id);
      const type = await services.activityTypes.create(a.accountId, { name: 'Order' });
      const bound = await services.earningRules.create(a.accountId, [
        { ...rule, name: 'Order', activity_token: type.token, earning_limit: { max: 3, type: 'lifetime' } },
        {
          ...rule,
          name: 'Spend',
          activity_token: type.token,
          reward_value: { type: 'variable', variable: { value: 1, per_amount: 0.01 } },
        },
      ]);
      for (const created of bound as { id: number }[]) rulesOf.get(a.accountId)?.add(created.id);
      const customerIds = (await services.customers.list(a.accountId)).map((c) => c.id);
      await services.pointsProducts.create(a.accountId, {
        exchange_type: 'fixed',
        points_price: 5,
        reward: { name: 'Sticker' },
      });
      await services.pointsTransactions.adjust(a.accountId, { customer_id: customerIds[0]!, points_change: 50 });
      return { a, b, weakKey: weak.key, revokedKey: revoked.key, rulesOf, activityToken: type.token, customerIds };
    });
    server = await servers.start({
      DATABASE_URL: database.url,
      RATE_LIMIT_PER_SECOND: '0',
      AUTH_FAILURES_PER_MINUTE: '0',
    });
    store = openStore(database.url);
    // Real cursors of both accounts, in both directions, to be replayed and tampered with.
    cursors = [];
    for (const tenant of [fixture.a, fixture.b]) {
      const first = await sendJson(server.url, 'GET', '/v1/earning_rules?limit=1', tenant.apiKey);
      const next = first.json.metadata.next_cursor as string;
      const second = await sendJson(server.url, 'GET', `/v1/earning_rules?limit=1&cursor=${next}`, tenant.apiKey);
      cursors.push(next, second.json.metadata.previous_cursor);
    }
    expect(cursors.every((c) => c.length === 67)).toBe(true);
  });
  afterAll(async () => {
    await store?.close();
    await servers.killAll();
    await database?.drop();
  });

  it(`answers ${RUNS} random requests without a 5xx or a drop, errors in the contract's shape, data untouched by refusals`, async () => {
    const replies: Reply[] = [];
    let before = await checksum(store);
    let changes = 0;

    const property = fc.asyncProperty(hostileRequests(fixture, cursors), async (request) => {
      const context = describeRequest(request);
      let reply: Reply;
      try {
        reply = await send(server.url, { ...request, body: request.body ?? undefined, timeoutMs: 10_000 });
      } catch (error) {
        if (error instanceof NoResponse) {
          throw new Error(`no complete response (${error.code}): ${context}\n${server.output().slice(-2000)}`);
        }
        throw error;
      }
      replies.push(reply);
      const where = `${context} -> ${reply.status} ${reply.body.slice(0, 300)}`;
      if (reply.status >= 500) throw new Error(`5xx: ${where}`);
      // Every request here is well-formed HTTP, so every one must reach the app (which sets the id).
      if (typeof reply.headers['x-request-id'] !== 'string') throw new Error(`did not reach the app: ${where}`);
      const isHead = request.method === 'HEAD';
      if (reply.status >= 400 && !isHead) checkContractError(reply, context);
      // A HEAD answer has no body to check, but its status must still be one of the contract's.
      if (reply.status >= 400 && isHead && !Object.values(ERROR_STATUS).includes(reply.status as never)) {
        throw new Error(`status outside the contract's table: ${where}`);
      }
      const page = reply.status === 200 && !isHead && reply.body.startsWith('{"earning_rules"');
      if (page) {
        // Tenancy holds under fuzzing too: only the caller's own enabled rules.
        const own = fixture.rulesOf.get(accountOf(fixture, request.headers.authorization) ?? -1);
        const ids = (JSON.parse(reply.body).earning_rules as { id: number }[]).map((r) => r.id);
        if (!own || ids.some((id) => !own.has(id))) throw new Error(`another account's rules: ${where}`);
      }

      const after = await checksum(store);
      const changed = changedTables(before, after);
      before = after; // also when failing, so shrinking compares each replay with its own before
      // Only a write that answered with what it wrote may change anything (whatever spelling of
      // the path reached it, such as /v1/customer%5Fidentities/…): an identity, an activity, a
      // points transaction. A refused one (a 422 insufficient_points included) writes nothing.
      const mayWrite =
        request.method === 'POST' && (reply.status === 200 || reply.status === 201) && answersWrite(reply);
      if (changed.length > 0) {
        if (!mayWrite) throw new Error(`${changed.join(', ')} changed by a request that did not write: ${where}`);
        changes++;
      }
    });
    await fc.assert(property, { numRuns: RUNS, verbose: 1 });

    const statuses = tally(replies, (r) => r.status);
    console.log(
      `hostile input (${testEngine}): ${replies.length} cases, ${Object.keys(statuses).length} status codes seen: ` +
        `${JSON.stringify(statuses)}; ${changes} accepted writes`,
    );
    expect(replies.length).toBeGreaterThanOrEqual(RUNS);
    // The generator reaches validation and success, not only authentication failures.
    expect(statuses['400']).toBeGreaterThan(RUNS / 20);
    expect((statuses['200'] ?? 0) + (statuses['201'] ?? 0)).toBeGreaterThan(RUNS / 20);
    expect((await send(server.url, { path: '/healthz' })).status).toBe(200);
  });

  it('answers or closes malformed HTTP at the parser, and keeps serving', async () => {
    const before = await checksum(store);
    const auth = `Authorization: Bearer ${fixture.a.accessToken}\r\n`;
    const post = `POST ${CREATE_OR_UPDATE} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\n`;
    const good = '{"customer_identity": {"distinct_id": "raw", "email": "raw@example.com"}}';
    const cases = [
      'GARBAGE\r\n\r\n',
      '\r\n\r\n\r\n',
      'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      'GET /he\u0000althz HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /healthz HTTP/1.1\r\n\r\n', // no Host
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(20 * 1024)}\r\n\r\n`, // headers too large
      `${post}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, // smuggling shape
      `${post}Transfer-Encoding: chunked\r\n\r\nzz\r\n${good}\r\n0\r\n\r\n`, // bad chunk size
      `${post}Content-Length: -1\r\n\r\n`,
      `${post}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab`,
      `${post}Content-Length: ${good.length}\r\n\r\n${good.slice(0, 10)}`, // body cut short, then closed
      `CONNECT 127.0.0.1:${server.port} HTTP/1.1\r\nHost: x\r\n\r\n`,
      'FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
      'GET http://elsewhere.example/healthz HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n', // Node answers 417 itself
      `${'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(50)}`, // pipelined
    ];
    const outcomes: string[] = [];
    for (const raw of cases) {
      const result = await rawExchange(server.port, [raw], { waitMs: 3000, endAfterWrite: true });
      const replies = parseRawReplies(result.data);
      outcomes.push(`${JSON.stringify(raw.slice(0, 40))}: ${replies.map((r) => r.status).join(',') || 'closed'}`);
      // Either a complete answer or a closed connection; never a 5xx.
      expect(result.closedByServer || replies.length > 0, outcomes.at(-1)).toBe(true);
      for (const reply of replies) {
        expect(reply.status, outcomes.at(-1)).toBeLessThan(500);
        // What reached the app (it sets X-Request-Id) answers in the contract's shape.
        if (reply.headers['x-request-id'] && reply.status >= 400) checkContractError(reply, raw.slice(0, 40));
      }
    }
    console.log(`malformed HTTP (${testEngine}): ${cases.length} cases: ${outcomes.join('; ')}`);
    // CONNECT is well-formed HTTP that Node would drop without a word: it reaches the contract.
    const tunnel = await rawExchange(server.port, [`CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: x\r\n\r\n`]);
    const [refused] = parseRawReplies(tunnel.data);
    expect(refused && checkContractError(refused, 'CONNECT')).toBe('not_found');
    expect(await checksum(store)).toBe(before);
    expect((await send(server.url, { path: '/healthz' })).status).toBe(200);
  });
});
