import type { FastifyRequest } from 'fastify';
import { invalidParameter } from '../errors.js';

/**
 * A list route's preValidation: the coercing query validator would read `limit=0x10` as 16 and
 * `limit=1e2` as 100; the limit is a plain decimal number, and anything else is refused rather
 * than guessed at.
 */
export async function requireDecimalLimit(request: FastifyRequest): Promise<void> {
  const limit = (request.query as Record<string, unknown>).limit;
  if (typeof limit === 'string' && !/^[0-9]{1,9}$/.test(limit)) {
    throw invalidParameter('limit', 'must be an integer from 1 to 250');
  }
}
