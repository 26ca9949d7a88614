import { randomUUID } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, ERROR_STATUS, type ErrorCode } from '../errors.js';
import { detailsOf, type SchemaIssue } from '../validation-details.js';
import { requestId } from './request-id.js';
import type { ErrorBody } from './schemas.js';

/**
 * One handler for every error, Fastify's own included (JSON parsing, media type, body size,
 * validation, unknown routes), so every error has the contract's body and status. A 5xx logs the
 * whole error with the request id and answers only a generic message.
 */
export function registerErrorHandling(app: FastifyInstance, hooks: { onDatabaseError?: () => void } = {}): void {
  // Node hands CONNECT (a proxy tunnel) to 'connect' listeners and, with none, drops the
  // connection without a word; it is answered like any unknown route instead.
  app.server.on('connect', refuseTunnel);
  app.setNotFoundHandler((request, reply) => {
    send(request, reply, new DomainError('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const domain = toDomainError(error);
    if (isDatabaseError(error)) hooks.onDatabaseError?.();
    if (domain.status >= 500) {
      if (domain.code === 'internal_error') request.log.error({ err: error }, 'request failed');
      else request.log.warn({ err: error }, domain.message);
    }
    // Answering a body that is too large while the client is still sending it, then closing (as
    // Fastify and a `Connection: close` client ask), resets the connection with the rest of the
    // body unread, often before the client has read the 413. The rest is read and thrown away
    // first (bounded by REQUEST_TIMEOUT_MS), so the close is clean and the answer arrives.
    if (domain.code === 'payload_too_large' && !request.raw.complete) {
      return bodyDiscarded(request.raw).then(() => {
        if (!request.raw.socket?.destroyed) send(request, reply, domain);
      });
    }
    send(request, reply, domain);
  });
}

/** Answers a CONNECT request `404 not_found` with the contract's body, then closes the connection. */
function refuseTunnel(request: IncomingMessage, socket: Duplex): void {
  socket.on('error', () => {});
  writeRaw(socket, 'not_found', 'CONNECT is not supported: this is not a proxy', requestId(request));
  socket.end();
}

/** Writes a whole response with the contract's error body straight to a socket Node's parser gave up on. */
function writeRaw(socket: Duplex, code: ErrorCode, message: string, id: string): void {
  const status = ERROR_STATUS[code];
  const body = JSON.stringify({ error: { code, message, request_id: id } } satisfies ErrorBody);
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `x-request-id: ${id}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

const CLIENT_ERROR_MESSAGES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'the request headers are too large',
  ERR_HTTP_REQUEST_TIMEOUT: 'the request was not received in time',
};

/**
 * Fastify's `clientErrorHandler`: requests Node's HTTP parser refuses (headers too large,
 * malformed, timed out) get the contract's body and an `X-Request-Id` like every other answer.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const id = randomUUID();
    // The contract's table gives every code one status: these are all 400 invalid_request.
    writeRaw(socket, 'invalid_request', CLIENT_ERROR_MESSAGES[error.code ?? ''] ?? 'the request is not valid HTTP', id);
  }
  socket.destroy();
}

/**
 * Node answers an HTTP/1.1 request without `Host` itself, in a body of its own; with Node's check
 * off (`requireHostHeader: false`), this hook refuses it with the contract's body.
 */
export async function requireHost(request: FastifyRequest): Promise<void> {
  if (request.raw.httpVersion === '1.1' && !request.headers.host) {
    throw new DomainError('invalid_request', 'an HTTP/1.1 request must carry a Host header');
  }
}

/** Resolves once the rest of the request body has been read and discarded, or the connection ended. */
function bodyDiscarded(raw: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    if (raw.complete || raw.destroyed) return resolve();
    raw.once('end', () => resolve());
    raw.once('close', () => resolve());
    raw.resume();
  });
}

/**
 * Fastify's `frameworkErrors` option: errors raised before routing, such as a path whose
 * percent-encoding does not decode, which Fastify would otherwise answer in its own shape.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  send(request, reply, toDomainError(error));
}

function send(request: FastifyRequest, reply: FastifyReply, error: DomainError): void {
  const body: ErrorBody = {
    error: { code: error.code, message: error.message, request_id: request.id },
  };
  if (error.details) body.error.details = error.details;
  if (error.code === 'unavailable' && !reply.hasHeader('retry-after')) reply.header('retry-after', '1');
  reply
    .code(error.status)
    .headers(error.headers ?? {})
    .header('x-request-id', request.id)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(body));
}

const payloadTooLarge = () => new DomainError('payload_too_large', 'the request body is larger than 64 KiB');
const unsupportedMediaType = () =>
  new DomainError('unsupported_media_type', 'the request body must be sent with Content-Type: application/json');
const unavailable = () => new DomainError('unavailable', 'the service is temporarily unavailable; retry shortly');

/** Maps any thrown value to the contract's error. */
export function toDomainError(error: FastifyError): DomainError {
  if (error instanceof DomainError) return error;
  if (error.validation) return fromValidation(error);
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
    const message = /prototype property/.test(error.message)
      ? 'the request body must not contain "__proto__" or "constructor.prototype" keys'
      : error instanceof SyntaxError
        ? 'the request body is not valid JSON'
        : 'the request is malformed';
    return new DomainError('invalid_request', message);
  }
  return new DomainError('internal_error', 'an internal error occurred; quote the request id when reporting it');
}

/**
 * A schema failure: of the envelope (body not an object, wrapper missing or not an object) it is
 * `invalid_request`; of a field, `invalid_parameter` with the field's dotted path in `details`.
 */
function fromValidation(error: FastifyError): DomainError {
  const context = (error as FastifyError & { validationContext?: string }).validationContext ?? 'body';
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
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

/** Errors raised by either database driver. */
function isDatabaseError(error: FastifyError): boolean {
  if (error instanceof DomainError || error.validation) return false;
  const code = typeof error.code === 'string' ? error.code : '';
  return code.startsWith('SQLITE_') || /^[0-9A-Z]{5}$/.test(code) || isDatabaseUnavailable(error);
}

/** Errors that mean the database cannot be reached right now, not that the request was wrong. */
function isDatabaseUnavailable(error: Error & { code?: string }): boolean {
  if (typeof error.code === 'string' && (UNAVAILABLE_CODES.has(error.code) || error.code.startsWith('08'))) {
    return true;
  }
  return /Connection terminated|timeout exceeded when trying to connect|driver has already been destroyed/i.test(
    error.message,
  );
}
