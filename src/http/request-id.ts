import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { looksLikeCredential } from './log-redaction.js';

const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request id: the caller's `X-Request-Id` when it is short and plain (so ids can follow a
 * request across services), otherwise a new UUID. Nothing else from the header reaches the logs.
 */
export function requestId(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  // A key pasted into the wrong header must not be echoed into every log line of the request.
  return typeof given === 'string' && ACCEPTABLE.test(given) && !looksLikeCredential(given) ? given : randomUUID();
}
