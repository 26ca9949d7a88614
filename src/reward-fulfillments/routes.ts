import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { throwAttachedValidation } from '../error-mapping.js';
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
import { fingerprint } from '../idempotency/service.js';
import { IdempotencyHeaders } from '../points-transactions/schemas.js';
import {
  RewardFulfillmentParams,
  RewardFulfillmentResponse,
  RewardFulfillmentsPage,
  RewardFulfillmentsQuery,
  UseBody,
} from './schemas.js';

const TAGS = ['Reward fulfillments'];
const WRITE = { auth: { scope: 'reward_fulfillment:write' } } as const;

/** What the use and cancel routes answer besides success. */
const changeResponses = {
  404: notFoundOf('reward fulfillment'),
  409: errorResponse(
    ['reward_already_used', 'idempotency_key_reused'],
    'reward_already_used (nothing was written), or idempotency_key_reused',
  ),
  413: payloadTooLargeResponse,
  415: unsupportedMediaTypeResponse,
  ...authErrorResponses,
};

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/reward_fulfillments',
    {
      config: { auth: { scope: 'reward_fulfillment:read' } },
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listRewardFulfillments',
        summary: 'List the rewards issued to the customers of the account, newest first',
        description:
          'Keyset pages in `id` descending order. Filters: `code` (finds a code a checkout was given: exact, but ' +
          'case, spaces and dashes do not matter), `customer_id`, `fulfillment_status`, `usage_status`, ' +
          '`updated_at_min`. A cursor carries its filters: sending it with other filters is `400 invalid_cursor`.',
        tags: TAGS,
        querystring: RewardFulfillmentsQuery,
        response: { 200: RewardFulfillmentsPage, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request) => app.services.rewardFulfillments.page(request.credential!.accountId, request.query),
  );

  app.post(
    '/v1/reward_fulfillments/:id/use',
    {
      config: WRITE,
      // The body is optional: none reads as {} (now), checked by the schema like any other.
      preValidation: async (request) => {
        request.body ??= {};
      },
      // The body's fields stand at its top level: their failures are invalid_parameter, by name.
      attachValidation: true,
      schema: {
        operationId: 'useRewardFulfillment',
        summary: 'Mark a reward code used',
        description:
          'Marks an issued, unused code used, at `used_at` (now when left out), exactly once however many ' +
          'uses race: the others are `409 reward_already_used`. A cancelled code is `422 reward_cancelled`, an ' +
          'expired one `422 reward_expired`; nothing is written then. The body is optional. Send an ' +
          '`Idempotency-Key` to retry safely.',
        tags: TAGS,
        params: RewardFulfillmentParams,
        headers: IdempotencyHeaders,
        body: UseBody,
        response: {
          200: { ...RewardFulfillmentResponse, description: 'The fulfillment, used' },
          400: badBodyResponse({
            message: 'used_at must not be in the future',
            details: [{ field: 'used_at', message: 'must not be in the future' }],
          }),
          ...changeResponses,
          422: errorResponse(
            ['reward_expired', 'reward_cancelled'],
            'reward_expired or reward_cancelled; nothing was written',
          ),
        },
      },
    },
    async (request, reply) => {
      if (request.validationError) throwAttachedValidation(request.validationError);
      const accountId = request.credential!.accountId;
      const { id } = request.params;
      const { body } = request;
      return sendIdempotently(
        app,
        reply,
        200,
        {
          accountId,
          key: request.headers['idempotency-key'],
          fingerprint: fingerprint(`POST /v1/reward_fulfillments/${id}/use`, body),
        },
        (w) => app.services.rewardFulfillments.useIn(w, accountId, id, body),
        (fulfillment) => ({ reward_fulfillment: fulfillment }),
      );
    },
  );

  app.post(
    '/v1/reward_fulfillments/:id/cancel',
    {
      config: WRITE,
      schema: {
        operationId: 'cancelRewardFulfillment',
        summary: 'Cancel an unused reward code and give its points back',
        description:
          'Cancels an issued, unused, unexpired code (`fulfillment_status` `cancelled`) and gives back the points ' +
          'its purchase spent, as one points transaction described `Refund: <reward name>` that does not count ' +
          'as earned. Exactly once however many cancels race. Any other code is `409 reward_already_used`, ' +
          'writing nothing. No body. Send an `Idempotency-Key` to retry safely.',
        tags: TAGS,
        params: RewardFulfillmentParams,
        headers: IdempotencyHeaders,
        response: {
          200: { ...RewardFulfillmentResponse, description: 'The fulfillment, cancelled' },
          400: badRequestResponse,
          ...changeResponses,
        },
      },
    },
    async (request, reply) => {
      const accountId = request.credential!.accountId;
      const { id } = request.params;
      return sendIdempotently(
        app,
        reply,
        200,
        {
          accountId,
          key: request.headers['idempotency-key'],
          fingerprint: fingerprint(`POST /v1/reward_fulfillments/${id}/cancel`, {}),
        },
        (w) => app.services.rewardFulfillments.cancelIn(w, accountId, id),
        (fulfillment) => ({ reward_fulfillment: fulfillment }),
      );
    },
  );
};

export default routes;
