import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { ERROR_STATUS, type ErrorCode } from '../../src/errors.js';

/** A response as any client sees it: from `app.inject()` or from a real socket. */
export interface ContractReply {
  status: number;
  headers: Readonly<Record<string, unknown>>;
  body: string;
}

/**
 * The one check of the contract's error (../shared/api-contract.md): body `{"error": {code,
 * message, request_id, details?}}` and nothing else, a code of the table with its status, `details`
 * a list of `{field, message}`, `X-Request-Id` equal to `request_id`, `Retry-After` in whole
 * seconds on 429 and 503. Throws a readable Error (it runs outside vitest's `expect` too, over
 * thousands of replies); returns the code.
 */
export function checkContractError(reply: ContractReply, context = ''): ErrorCode {
  const where = `${context} -> ${reply.status} ${reply.body.slice(0, 300)}`;
  const fail = (why: string): never => {
    throw new Error(`not the contract's error (${why}): ${where}`);
  };
  let body: any;
  try {
    body = JSON.parse(reply.body);
  } catch {
    fail('body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) fail('body is not an object');
  if (Object.keys(body).join() !== 'error') fail('top-level keys other than "error"');
  const error = body.error;
  if (typeof error !== 'object' || error === null) fail('"error" is not an object');
  for (const key of Object.keys(error)) {
    if (!['code', 'message', 'request_id', 'details'].includes(key)) fail(`unexpected key error.${key}`);
  }
  const code = error.code as ErrorCode;
  if (!Object.hasOwn(ERROR_STATUS, code)) fail(`code ${JSON.stringify(code)} is not in the contract's table`);
  if (ERROR_STATUS[code] !== reply.status) fail(`code ${code} belongs with ${ERROR_STATUS[code]}`);
  if (typeof error.message !== 'string' || error.message === '') fail('no message');
  if (typeof error.request_id !== 'string' || error.request_id === '') fail('no request_id');
  if (reply.headers['x-request-id'] !== error.request_id) fail('X-Request-Id differs from request_id');
  if (error.details !== undefined) {
    const ok =
      Array.isArray(error.details) &&
      error.details.every(
        (d: any) =>
          typeof d?.field === 'string' &&
          typeof d?.message === 'string' &&
          (d.reason === undefined || typeof d.reason === 'string') &&
          Object.keys(d).length === (d.reason === undefined ? 2 : 3),
      );
    if (!ok) fail('details is not a list of {field, message[, reason]}');
  }
  if (code === 'unavailable' || code === 'rate_limited') {
    const retryAfter = Number(reply.headers['retry-after']);
    if (!Number.isInteger(retryAfter) || retryAfter < 1) fail('no Retry-After of whole seconds');
  }
  return code;
}

/** Asserts the contract's error with this `code` (checkContractError); returns the error object. */
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
  checkContractError({ status: response.statusCode, headers: response.headers, body: response.body });
  return body.error;
}
