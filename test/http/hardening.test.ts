import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { redactUrlSecrets } from '../../src/http/log-redaction.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { earningRuleFixture } from '../helpers/fixtures.js';

const UPSERT = '/v1/customer_identities/create_or_update';

let t: TestApp;
let a: Tenant;

// One app for the file; each test makes its own account and counts only that account's rows.
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());
beforeEach(async () => {
  a = await createTenant(t.services);
});

const postRaw = (payload: string | Buffer) =>
  t.app.inject({
    method: 'POST',
    url: UPSERT,
    headers: { ...bearer(a.accessToken), 'content-type': 'application/json' },
    payload,
  });

async function identityCount(): Promise<number> {
  const row = await t.db.kysely
    .selectFrom('customer_identities')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('account_id', '=', a.accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('an empty cursor', () => {
  it('is 400 invalid_cursor before and after the page cache holds the first page', async () => {
    for (let i = 0; i < 9; i++) await t.services.earningRules.create(a.accountId, earningRuleFixture(`rule ${i}`));
    const get = (url: string) => t.app.inject({ method: 'GET', url, headers: bearer(a.apiKey) });
    expectError(await get('/v1/earning_rules?limit=7&cursor='), 'invalid_cursor');
    const first = await get('/v1/earning_rules?limit=7');
    expect(first.statusCode).toBe(200);
    expect(first.json().earning_rules).toHaveLength(7);
    // Warm: the first page is cached now.
    const error = expectError(await get('/v1/earning_rules?limit=7&cursor='), 'invalid_cursor');
    expect(error.details).toEqual([{ field: 'cursor', message: expect.any(String) }]);
    expectError(await get('/v1/earning_rules?cursor='), 'invalid_cursor');
  });

  it('is declared with minLength 1 in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    const cursor = doc.paths['/v1/earning_rules'].get.parameters.find((p: { name: string }) => p.name === 'cursor');
    expect(cursor.schema.minLength).toBe(1);
  });
});

describe('odd JSON is refused naming what is wrong', () => {
  const identity = (extra: string) =>
    `{"customer_identity":{"distinct_id":"crm-1","email":"jane@example.com"${extra}}}`;

  it('names a __proto__ or constructor.prototype key in details', async () => {
    let error = expectError(await postRaw(identity(',"properties":{"__proto__":{"admin":true}}')), 'invalid_request');
    expect(error.details).toEqual([{ field: 'customer_identity.properties.__proto__', message: expect.any(String) }]);
    error = expectError(await postRaw(identity(',"properties":{"constructor":{"prototype":{}}}')), 'invalid_request');
    expect(error.details[0].field).toBe('customer_identity.properties.constructor.prototype');
    error = expectError(await postRaw('{"__proto__":{}}'), 'invalid_request');
    expect(error.details[0].field).toBe('__proto__');
    expect(await identityCount()).toBe(0);
  });

  it('refuses lone surrogates in any string, key or value, with 400 invalid_parameter naming the field', async () => {
    for (const [body, field] of [
      ['{"customer_identity":{"distinct_id":"a\\ud800","email":"jane@example.com"}}', 'customer_identity.distinct_id'],
      ['{"customer_identity":{"distinct_id":"\\udbff","email":"jane@example.com"}}', 'customer_identity.distinct_id'],
      [
        '{"customer_identity":{"distinct_id":"x","email":"jane@example.com","first_name":"\\udc00z"}}',
        'customer_identity.first_name',
      ],
      [identity(',"properties":{"tags":["ok","\\ud83d"]}'), 'customer_identity.properties.tags.1'],
      [identity(',"properties":{"k\\ud800":1}'), 'customer_identity.properties.k\ud800'],
    ] as const) {
      const error = expectError(await postRaw(body), 'invalid_parameter');
      expect(error.details[0].field).toBe(field);
    }
    // A well-formed pair and U+FFFD itself are fine, and stay distinct identities.
    expect((await postRaw(identity('').replace('crm-1', '\\ud83d\\ude00'))).statusCode).toBe(201);
    expect((await postRaw(identity('').replace('crm-1', '\ufffd'))).statusCode).toBe(201);
    expect(await identityCount()).toBe(2);
  });

  it('refuses invalid UTF-8 bytes', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"customer_identity":{"distinct_id":"'),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('","email":"jane@example.com"}}'),
    ]);
    const error = expectError(await postRaw(bytes), 'invalid_request');
    expect(error.message).toMatch(/UTF-8/);
    expect(await identityCount()).toBe(0);
  });

  it('refuses numbers JSON cannot keep, naming where they are', async () => {
    for (const [literal, field] of [
      ['{"n":1e400}', 'customer_identity.properties.n'],
      ['{"n":-1e400}', 'customer_identity.properties.n'],
      ['{"n":1e-400}', 'customer_identity.properties.n'],
      ['{"a":[0,{"b":2.5e-999}]}', 'customer_identity.properties.a.1.b'],
      [`{"n":1${'0'.repeat(400)}}`, 'customer_identity.properties.n'],
    ] as const) {
      const error = expectError(await postRaw(identity(`,"properties":${literal}`)), 'invalid_parameter');
      expect(error.details[0].field).toBe(field);
    }
    expect(await identityCount()).toBe(0);
    // Zero, tiny-but-representable and large-but-finite numbers are kept as sent.
    const ok = await postRaw(identity(',"properties":{"z":0,"y":0.0e5,"x":-0.0,"w":5e-324,"v":1.5e308}'));
    expect(ok.statusCode, ok.body).toBe(201);
    // (-0 comes back as 0: JSON writes it so.)
    expect(ok.json().customer_identity.properties).toEqual({ z: 0, y: 0, x: 0, w: 5e-324, v: 1.5e308 });
  });
});

describe("Node's parser errors get the contract's body", () => {
  // The file's one app listens once, for every raw request.
  let address: string | undefined;
  async function raw(request: string): Promise<string> {
    address ??= await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = new URL(address);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1');
      let answer = '';
      socket.on('data', (chunk) => {
        answer += chunk.toString('latin1');
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(answer));
      socket.write(request);
    });
  }

  // The contract gives invalid_request one status, 400, whatever Node's parser would have sent.
  function expectContractAnswer(answer: string): void {
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    const id = /x-request-id: (\S+)/i.exec(head)?.[1];
    expect(id).toBeTruthy();
    const parsed = JSON.parse(body);
    expect(parsed.error).toMatchObject({ code: 'invalid_request', request_id: id });
    expect(parsed.error.message).toEqual(expect.any(String));
  }

  it('answers a malformed request line', async () => {
    expectContractAnswer(await raw('GET /healthz HTTP/9.Z\r\n\r\n'));
  });

  it('answers headers too large', async () => {
    const answer = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectContractAnswer(answer);
    expect(answer).toMatch(/headers are too large/);
  });

  it('answers an HTTP/1.1 request without Host', async () => {
    const answer = await raw('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    expectContractAnswer(answer);
    expect(answer).toMatch(/Host header/);
  });
});

describe('log redaction', () => {
  it('redacts percent-encoded credentials in paths and queries', () => {
    const key = `api_${'A1b2C3d4'.repeat(5)}`;
    const encoded = key.replace('_', '%5F');
    for (const url of [
      `/v1/${encoded}`,
      `/v1/earning_rules?x=${encoded}`,
      `/v1/x?y=${encoded.replace('%5F', '%255F')}`,
    ]) {
      const logged = redactUrlSecrets(url);
      expect(logged).not.toContain('A1b2C3d4');
      expect(logged).toContain('[redacted]');
    }
    // Malformed escapes do not stop the rest from being redacted.
    expect(redactUrlSecrets(`/v1/%E0%A4%A?k=${encoded}`)).not.toContain('A1b2C3d4');
  });
});
