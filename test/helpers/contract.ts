import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { ERROR_STATUS, type ErrorCode } from '../../src/errors.js';

/** Asserts the contract's error: status, code, body shape and the X-Request-Id echo. */
export function expectError(response: LightMyRequestResponse, code: ErrorCode): Record<string, any> {
  expect({ status: response.statusCode, body: response.json() }).toMatchObject({
    status: ERROR_STATUS[code],
    body: { error: { code } },
  });
  const body = response.json();
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.request_id).toBe(response.headers['x-request-id']);
  expect(Object.keys(body)).toEqual(['error']);
  return body.error;
}
