import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createTestDb, type TestDb } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';

// The error handler is global: these cases run against throwaway routes added to a real app,
// so they hold for every route, present and future.
describe('the error handler gives every error the contract body', () => {
  let testDb: TestDb;
  let app: Awaited<ReturnType<typeof buildApp>>;

  beforeAll(async () => {
    testDb = await createTestDb();
    app = await buildApp({ config: loadConfig({ RATE_LIMIT_PER_SECOND: '0' }), db: testDb.db, logger: false });
    app.post(
      '/test/echo',
      {
        schema: {
          body: Type.Object(
            {
              thing: Type.Object(
                { name: Type.String({ maxLength: 5 }), count: Type.Optional(Type.Integer()) },
                { additionalProperties: false },
              ),
            },
            { additionalProperties: false },
          ),
          querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 9 })) }),
        },
      },
      async (request) => request.body,
    );
    app.get('/test/crash', async () => {
      throw new Error('SQLITE_ERROR: no such column: secret_hash in select * from api_keys');
    });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await testDb.destroy();
  });

  const post = (payload: string, contentType: string | null = 'application/json', url = '/test/echo') =>
    app.inject({ method: 'POST', url, payload, headers: contentType ? { 'content-type': contentType } : {} });

  it('answers an unknown path with 404 not_found', async () => {
    expectError(await app.inject({ method: 'GET', url: '/v1/nope' }), 'not_found');
    expectError(await app.inject({ method: 'DELETE', url: '/v1/referral_settings' }), 'not_found');
  });

  it('answers malformed JSON with 400 invalid_request', async () => {
    expectError(await post('{"thing":'), 'invalid_request');
    expectError(await post(''), 'invalid_request');
  });

  it('answers a body that is not an object of the documented shape with 400 invalid_request', async () => {
    expectError(await post('[1,2]'), 'invalid_request');
    expectError(await post('"text"'), 'invalid_request');
    expectError(await post('{}'), 'invalid_request');
    expectError(await post('{"thing":"x"}'), 'invalid_request');
  });

  it('answers a bad field with 400 invalid_parameter naming it', async () => {
    const tooLong = expectError(await post('{"thing":{"name":"abcdef"}}'), 'invalid_parameter');
    expect(tooLong.details).toEqual([{ field: 'thing.name', message: expect.any(String) }]);
    const unknown = expectError(await post('{"thing":{"name":"a","colour":"red"}}'), 'invalid_parameter');
    expect(unknown.details).toEqual([{ field: 'thing.colour', message: 'is not a known field' }]);
    const missing = expectError(await post('{"thing":{}}'), 'invalid_parameter');
    expect(missing.details).toEqual([{ field: 'thing.name', message: 'is required' }]);
  });

  it('does not coerce body types: a string is not an integer', async () => {
    const error = expectError(await post('{"thing":{"name":"a","count":"5"}}'), 'invalid_parameter');
    expect(error.details[0].field).toBe('thing.count');
  });

  it('validates query parameters as invalid_parameter', async () => {
    for (const limit of ['0', '10', 'abc', '1.5', '']) {
      const error = expectError(
        await post('{"thing":{"name":"a"}}', 'application/json', `/test/echo?limit=${limit}`),
        'invalid_parameter',
      );
      expect(error.details[0].field).toBe('limit');
    }
  });

  it('answers a body without Content-Type: application/json with 415', async () => {
    expectError(await post('{"thing":{"name":"a"}}', 'text/plain'), 'unsupported_media_type');
    expectError(await post('thing=a', 'application/x-www-form-urlencoded'), 'unsupported_media_type');
    expectError(await post('{"thing":{"name":"a"}}', null), 'unsupported_media_type');
  });

  it('accepts application/json with a charset', async () => {
    const response = await post('{"thing":{"name":"a"}}', 'application/json; charset=utf-8');
    expect(response.statusCode).toBe(200);
  });

  it('answers a body over 64 KiB with 413 payload_too_large', async () => {
    expectError(await post(JSON.stringify({ thing: { name: 'x'.repeat(70_000) } })), 'payload_too_large');
  });

  it('answers an unexpected error with a generic 500 that leaks nothing', async () => {
    const response = await app.inject({ method: 'GET', url: '/test/crash' });
    const error = expectError(response, 'internal_error');
    expect(response.body).not.toMatch(/SQLITE|api_keys|secret/);
    expect(error.message).toMatch(/request id/);
  });

  it('echoes a plain X-Request-Id and replaces a hostile one', async () => {
    const echoed = await app.inject({ method: 'GET', url: '/v1/nope', headers: { 'x-request-id': 'trace-abc.123' } });
    expect(echoed.headers['x-request-id']).toBe('trace-abc.123');
    expect(echoed.json().error.request_id).toBe('trace-abc.123');
    const replaced = await app.inject({
      method: 'GET',
      url: '/v1/nope',
      headers: { 'x-request-id': 'a b\u0007<script>' },
    });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
