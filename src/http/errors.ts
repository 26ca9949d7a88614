import { randomUUID } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isClientAbort, isDatabaseError, toContractError } from '../error-mapping.js';
import { DomainError, ERROR_STATUS, type ErrorCode } from '../errors.js';
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

  // Every error of every route, the OAuth routes' included (they have a handler of their own
  // but inherit this hook), is looked at here once for the database-error metric.
  app.addHook('onError', async (_request, _reply, error) => {
    if (isDatabaseError(error)) hooks.onDatabaseError?.();
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const domain = toContractError(error);
    logFailure(request, error, domain);
    // Answering a body that is too large while the client is still sending it, then closing (as
    // Fastify and a `Connection: close` client ask), resets the connection with the rest of the
    // body unread, often before the client has read the 413. The rest is read and thrown away
    // first (bounded by REQUEST_TIMEOUT_MS), so the close is clean and the answer arrives.
    // The wait is not returned: when a promise from an error handler settles, Fastify sends
    // again unless `reply.sent`, which stays false until send batching writes the answer at the
    // end of the turn (the 413 was sent twice, the second logged as ERR_HTTP_HEADERS_SENT).
    if (domain.code === 'payload_too_large' && !request.raw.complete) {
      void bodyDiscarded(request.raw).then(() => {
        if (!request.raw.socket?.destroyed) send(request, reply, domain);
      });
      return;
    }
    send(request, reply, domain);
  });
}

/**
 * Logs a 5xx with the whole error: an internal error as an error, an unreachable database as a
 * warning. A client that closed the connection mid-body is noted at info level, as Fastify notes
 * its other aborted requests: it says nothing about the server's health.
 */
export function logFailure(request: FastifyRequest, error: unknown, domain: DomainError): void {
  if (isClientAbort(error)) {
    const { code, message } = error as Error & { code?: string };
    request.log.info({ err: { code, message } }, 'the client closed the connection before sending the whole body');
    return;
  }
  if (domain.status < 500) return;
  if (domain.code === 'internal_error') request.log.error({ err: error }, 'request failed');
  else request.log.warn({ err: error }, domain.message);
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
export function answerClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Duplex): void {
  // As Fastify's own handler does, at trace level; without the raw bytes, which may hold a credential.
  this.log.trace({ err: { code: error.code, message: error.message } }, 'client error');
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
export function requireHost(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const missing = request.raw.httpVersion === '1.1' && !request.headers.host;
  done(missing ? new DomainError('invalid_request', 'an HTTP/1.1 request must carry a Host header') : undefined);
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
  send(request, reply, toContractError(error));
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
