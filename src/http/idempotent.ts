import type { FastifyInstance, FastifyReply } from 'fastify';
import type { IdempotentRequest } from '../idempotency/service.js';
import type { Work } from '../storage/unit-of-work.js';

/**
 * Answers an idempotent write: runs `work` in one unit of work under the request's
 * `Idempotency-Key` and sends `status` with `body(result)`, serialised by the route's schema for
 * that status; or, when the key already has an answer, sends its stored bytes unchanged.
 */
export async function sendIdempotently<T>(
  app: FastifyInstance,
  reply: FastifyReply,
  status: number,
  request: IdempotentRequest,
  work: (w: Work) => Promise<T>,
  body: (result: T) => unknown,
): Promise<FastifyReply> {
  // The status first: reply.serialize picks the response schema of the reply's current status.
  reply.code(status);
  const answer = await app.services.idempotency.run(
    request,
    status,
    work,
    (result) => reply.serialize(body(result)) as string,
  );
  return reply.code(answer.status).type('application/json; charset=utf-8').send(answer.body);
}
