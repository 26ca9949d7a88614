import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireDecimalLimit } from '../http/pagination.js';
import { authErrorResponses, badRequestResponse } from '../http/schemas.js';
import { RewardFulfillmentsPage, RewardFulfillmentsQuery } from './schemas.js';

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
          'Keyset pages in `id` descending order. Filters: `customer_id`, `fulfillment_status`, `usage_status`, ' +
          '`updated_at_min`. A cursor carries its filters: sending it with other filters is `400 invalid_cursor`.',
        tags: ['Reward fulfillments'],
        querystring: RewardFulfillmentsQuery,
        response: { 200: RewardFulfillmentsPage, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request) => app.services.rewardFulfillments.page(request.credential!.accountId, request.query),
  );
};

export default routes;
