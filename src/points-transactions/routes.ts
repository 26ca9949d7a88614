import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sendIdempotently } from '../http/idempotent.js';
import { requireDecimalLimit } from '../http/pagination.js';
import {
  authErrorResponses,
  badBodyResponse,
  badRequestResponse,
  errorResponse,
  notFoundOf,
  payloadTooLargeResponse,
  unsupportedMediaTypeResponse,
} from '../http/schemas.js';
import {
  CreatePointsTransactionBody,
  IdempotencyHeaders,
  PointsTransactionParams,
  PointsTransactionResponse,
  PointsTransactionsPage,
  PointsTransactionsQuery,
} from './schemas.js';
import { manualChangeRequest } from './service.js';

/** The error answers of a write with a JSON body and an `Idempotency-Key`. */
export const writeErrorResponses = {
  400: badBodyResponse({
    message: 'points_transaction.points_change must not be 0',
    details: [{ field: 'points_transaction.points_change', message: 'must not be 0' }],
  }),
  409: errorResponse(
    ['idempotency_key_reused'],
    'idempotency_key_reused: the Idempotency-Key was used with another request in the last 24 hours',
  ),
  413: payloadTooLargeResponse,
  415: unsupportedMediaTypeResponse,
  422: errorResponse(
    ['insufficient_points'],
    'insufficient_points: the change would take the balance below 0; nothing was written',
  ),
};

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/v1/points_transactions',
    {
      config: { auth: { scope: 'points_transaction:write' } },
      schema: {
        operationId: 'createPointsTransaction',
        summary: "Add or remove points from a customer's balance",
        description:
          'A manual change to the ledger: `points_change` is a non-zero integer (at most 1,000,000,000 either way). ' +
          'A change that would take the balance below 0 is `422 insufficient_points` and writes nothing. A ' +
          'positive change counts as earned (VIP progress); a negative one does not lower what was earned. ' +
          'Send an `Idempotency-Key` to retry safely.',
        tags: ['Points transactions'],
        headers: IdempotencyHeaders,
        body: CreatePointsTransactionBody,
        response: {
          201: { ...PointsTransactionResponse, description: 'The transaction was written' },
          ...writeErrorResponses,
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const { accountId } = request.credential!;
      const input = request.body.points_transaction;
      return sendIdempotently(
        app,
        reply,
        201,
        manualChangeRequest(accountId, input, request.headers['idempotency-key']),
        (w) => app.services.pointsTransactions.create(w, accountId, input),
        (transaction) => ({ points_transaction: transaction }),
      );
    },
  );

  app.get(
    '/v1/points_transactions',
    {
      config: { auth: { scope: 'points_transaction:read' } },
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listPointsTransactions',
        summary: 'List the points transactions of the account, newest first',
        description:
          'Keyset pages in `id` descending order. Filters: `customer_id`, `updated_at_min`. A cursor carries its ' +
          'filters: sending it with other filters is `400 invalid_cursor`.',
        tags: ['Points transactions'],
        querystring: PointsTransactionsQuery,
        response: { 200: PointsTransactionsPage, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request) => app.services.pointsTransactions.page(request.credential!.accountId, request.query),
  );

  app.get(
    '/v1/points_transactions/:id',
    {
      config: { auth: { scope: 'points_transaction:read' } },
      schema: {
        operationId: 'getPointsTransaction',
        summary: 'Retrieve a points transaction',
        description: "An id the account does not have (another account's included) is `404 not_found`.",
        tags: ['Points transactions'],
        params: PointsTransactionParams,
        response: {
          200: { ...PointsTransactionResponse, description: 'The points transaction' },
          400: badRequestResponse,
          404: notFoundOf('points transaction'),
          ...authErrorResponses,
        },
      },
    },
    async (request) => ({
      points_transaction: await app.services.pointsTransactions.get(request.credential!.accountId, request.params.id),
    }),
  );
};

export default routes;
