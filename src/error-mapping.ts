import { DomainError, type ErrorCode } from './errors.js';
import { detailsOf, type SchemaIssue } from './validation-details.js';

/** What Fastify (and the drivers) put on their errors; read by code, so no framework import. */
interface FrameworkError extends Error {
  code?: string;
  statusCode?: number;
  validation?: unknown[];
  validationContext?: string;
}

const payloadTooLarge = () => new DomainError('payload_too_large', 'the request body is larger than 64 KiB');
const unsupportedMediaType = () =>
  new DomainError('unsupported_media_type', 'the request body must be sent with Content-Type: application/json');
const unavailable = () => new DomainError('unavailable', 'the service is temporarily unavailable; retry shortly');

/**
 * The one mapping from anything thrown to the contract's error, used by every front door: the
 * `/v1` error handler, the OAuth endpoints (which then write RFC 6749's form) and pages, and the
 * CLI. Domain errors pass as they are; schema failures name their fields; a database that cannot
 * be reached is `unavailable`; Fastify's own errors get their codes; anything else is
 * `internal_error`.
 */
export function toContractError(thrown: unknown): DomainError {
  if (thrown instanceof DomainError) return thrown;
  if (!(thrown instanceof Error)) return internalError();
  const error = thrown as FrameworkError;
  if (error.validation) return fromValidation(error);
  if (isClientAbort(error)) {
    return new DomainError('invalid_request', 'the connection closed before the whole request body arrived');
  }
  if (isDatabaseUnavailable(error)) return unavailable();
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return unsupportedMediaType();
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return payloadTooLarge();
    case 'FST_ERR_BAD_URL':
      return new DomainError('invalid_request', 'the URL is malformed: its percent-encoding does not decode');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new DomainError('invalid_request', 'the request body is empty; a JSON object is required');
  }
  const status = error.statusCode ?? 500;
  if (status === 413) return payloadTooLarge();
  if (status === 415) return unsupportedMediaType();
  if (status === 404) return new DomainError('not_found', 'not found');
  if (status === 503) return unavailable();
  if (status >= 400 && status < 500) {
    const message = error instanceof SyntaxError ? 'the request body is not valid JSON' : 'the request is malformed';
    return new DomainError('invalid_request', message);
  }
  return internalError();
}

const internalError = () =>
  new DomainError('internal_error', 'an internal error occurred; quote the request id when reporting it');

/**
 * A schema failure: of the envelope (body not an object, wrapper missing or not an object) it is
 * `invalid_request`; of a field, `invalid_parameter` with the field's dotted path in `details`.
 */
function fromValidation(error: FrameworkError): DomainError {
  const context = error.validationContext ?? 'body';
  const issues = (error.validation ?? []) as unknown as SchemaIssue[];
  const details = detailsOf(issues, { whole: context });
  const envelope = context === 'body' && issues.some(isEnvelopeIssue);
  // The contract has its own code for a bad cursor: an empty or overlong one is one.
  if (context === 'querystring' && issues.length > 0 && issues.every(isCursorLengthIssue)) {
    return new DomainError('invalid_cursor', 'cursor must be a cursor from an earlier response, not empty', details);
  }
  const code: ErrorCode = envelope ? 'invalid_request' : 'invalid_parameter';
  const first = details[0];
  const message = envelope
    ? 'the request body must be a JSON object of the documented shape'
    : first
      ? `${first.field} ${first.message}`
      : 'invalid parameter';
  return new DomainError(code, message, details);
}

function isCursorLengthIssue(issue: SchemaIssue): boolean {
  return issue.instancePath === '/cursor' && (issue.keyword === 'minLength' || issue.keyword === 'maxLength');
}

function isEnvelopeIssue(issue: SchemaIssue): boolean {
  const depth = issue.instancePath.split('/').length - 1;
  if (depth === 0) return true; // the body itself: wrong type, wrapper missing, unknown top-level key
  return depth === 1 && issue.keyword === 'type'; // the wrapper is not an object
}

const UNAVAILABLE_CODES = new Set([
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_CANTOPEN',
  'SQLITE_IOERR',
  'SQLITE_ABORT', // rolled back with its commit group (GroupRolledBack): nothing of it was kept
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '40P01', // deadlock_detected: rolled back whole; the unit of work retried it already (storage/unit-of-work.ts)
  '40001', // serialization_failure: the same
]);

/** Codes of the error Node destroys a request with when its client goes before the body's end. */
const CLIENT_ABORT_CODES = new Set(['ECONNRESET', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);

/**
 * The error of a request whose client closed the connection before sending the whole body: Node
 * destroys the request stream with `Error('aborted')` (code `ECONNRESET`), and Fastify's body
 * reader gives every error of that stream a 4xx status. A driver's `ECONNRESET` has neither the
 * message nor a status, so the client's is never taken for the database's: anyone can close a
 * connection halfway, and the database-error metric is what operators are paged on.
 */
export function isClientAbort(thrown: unknown): boolean {
  if (!(thrown instanceof Error) || thrown instanceof DomainError) return false;
  const error = thrown as FrameworkError;
  if (!CLIENT_ABORT_CODES.has(error.code ?? '')) return false;
  return error.message === 'aborted' || isRequestStatus(error.statusCode);
}

/** A 4xx status, which Fastify puts on the errors of reading a request and no driver puts on its own. */
function isRequestStatus(status: number | undefined): boolean {
  return status !== undefined && status >= 400 && status < 500;
}

/** Errors raised by either database driver: what the database-error metric counts. */
export function isDatabaseError(thrown: unknown): boolean {
  if (!(thrown instanceof Error) || thrown instanceof DomainError) return false;
  const error = thrown as FrameworkError;
  if (error.validation || isRequestStatus(error.statusCode) || isClientAbort(error)) return false;
  const code = typeof error.code === 'string' ? error.code : '';
  return code.startsWith('SQLITE_') || /^[0-9A-Z]{5}$/.test(code) || isDatabaseUnavailable(error);
}

/** Errors that mean the database cannot be reached right now, not that the request was wrong. */
function isDatabaseUnavailable(error: Error & { code?: string }): boolean {
  if (typeof error.code === 'string' && (UNAVAILABLE_CODES.has(error.code) || error.code.startsWith('08'))) {
    return true;
  }
  // A prepared statement whose table changed shape under it: the text runs unnamed from now on
  // (storage/postgres-statements.ts), so a retry succeeds.
  if (error.code === '0A000' && /cached plan must not change result type/.test(error.message)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|driver has already been destroyed/i.test(
    error.message,
  );
}

/**
 * Throws a route's attached schema failure (`attachValidation`) as the contract's error: a body
 * whose fields stand at its top level by fromFlatBodyValidation, anything else (params, headers)
 * as it came.
 */
export function throwAttachedValidation(error: Error & { validation?: unknown[]; validationContext?: string }): never {
  if (error.validationContext === 'body') throw fromFlatBodyValidation(error);
  throw error;
}

/**
 * A schema failure of a body whose fields stand at its top level, without a wrapper object (the
 * purchase body `{customer_id, points_to_spend}`): a body that is not an object is
 * `invalid_request`; a missing, unknown or invalid field is `invalid_parameter` naming it.
 */
export function fromFlatBodyValidation(error: Error & { validation?: unknown[] }): DomainError {
  const issues = (error.validation ?? []) as SchemaIssue[];
  if (issues.some((issue) => issue.instancePath === '' && issue.keyword === 'type')) {
    return new DomainError('invalid_request', 'the request body must be a JSON object of the documented shape');
  }
  const details = detailsOf(issues, { whole: 'body' });
  const first = details[0];
  return new DomainError('invalid_parameter', first ? `${first.field} ${first.message}` : 'invalid parameter', details);
}
