import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { throwAttachedValidation } from '../error-mapping.js';
import { sendIdempotently } from '../http/idempotent.js';
import { requireDecimalLimit } from '../http/pagination.js';
import { authErrorResponses, badBodyResponse, badRequestResponse, errorResponse, notFoundOf } from '../http/schemas.js';
import { fingerprint } from '../idempotency/service.js';
import { writeErrorResponses } from '../points-transactions/routes.js';
import { IdempotencyHeaders } from '../points-transactions/schemas.js';
import {
  PointsProductParams,
  PointsProductResponse,
  PointsProductsPage,
  PointsProductsQuery,
  PointsPurchaseResponse,
  PurchaseBody,
} from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/points_products',
    {
      config: { auth: { scope: 'points_product:read' } },
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listPointsProducts',
        summary: 'List the points products the account sells, newest first',
        description:
          'The enabled products, in keyset pages of `id` descending. Filter: `exchange_type`. A cursor carries ' +
          'its filter: sending it with another is `400 invalid_cursor`.',
        tags: ['Points products'],
        querystring: PointsProductsQuery,
        response: { 200: PointsProductsPage, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request) => app.services.pointsProducts.page(request.credential!.accountId, request.query),
  );

  app.get(
    '/v1/points_products/:id',
    {
      config: { auth: { scope: 'points_product:read' } },
      schema: {
        operationId: 'getPointsProduct',
        summary: 'Retrieve a points product',
        description: "A disabled product, or an id the account does not have (another account's included), is `404`.",
        tags: ['Points products'],
        params: PointsProductParams,
        response: {
          200: { ...PointsProductResponse, description: 'The points product' },
          400: badRequestResponse,
          404: notFoundOf('points product'),
          ...authErrorResponses,
        },
      },
    },
    async (request) => ({
      points_product: await app.services.pointsProducts.get(request.credential!.accountId, request.params.id),
    }),
  );

  app.post(
    '/v1/points_products/:id/purchase',
    {
      config: { auth: { scope: 'points_purchase:write' } },
      // The body's fields stand at its top level: their failures are invalid_parameter, by name.
      attachValidation: true,
      schema: {
        operationId: 'purchasePointsProduct',
        summary: "Spend a customer's points on a points product",
        description:
          'In one transaction: a points transaction of minus the points, the purchase, and the reward ' +
          'fulfillment with a new code. `422 insufficient_points` when the balance is short, `422 ' +
          'customer_not_member` for a customer who is not a member; nothing is written then. Send an ' +
          '`Idempotency-Key` to retry safely.',
        tags: ['Points products'],
        params: PointsProductParams,
        headers: IdempotencyHeaders,
        body: PurchaseBody,
        response: {
          201: { ...PointsPurchaseResponse, description: 'The purchase, with the reward fulfillment it issued' },
          ...writeErrorResponses,
          400: badBodyResponse({
            message: 'points_to_spend must be a multiple of 100 from 100 to 5000',
            details: [{ field: 'points_to_spend', message: 'must be a multiple of 100 from 100 to 5000' }],
          }),
          404: notFoundOf('points product'),
          422: errorResponse(
            ['insufficient_points', 'customer_not_member'],
            'insufficient_points or customer_not_member; nothing was written',
          ),
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      if (request.validationError) throwAttachedValidation(request.validationError);
      const accountId = request.credential!.accountId;
      const { params, body } = request;
      const idempotent = {
        accountId,
        key: request.headers['idempotency-key'],
        fingerprint: fingerprint(`POST /v1/points_products/${params.id}/purchase`, body),
      };
      return sendIdempotently(
        app,
        reply,
        201,
        idempotent,
        (w) => app.services.pointsProducts.purchaseIn(w, accountId, params.id, body),
        (purchase) => ({ points_purchase: purchase }),
      );
    },
  );
};

export default routes;
