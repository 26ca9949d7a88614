import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authErrorResponses, badRequestResponse } from '../http/schemas.js';
import { VipTiersQuery, VipTiersResponse } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/vip_tiers',
    {
      config: { auth: { scope: 'vip_tier:read' } },
      schema: {
        operationId: 'listVipTiers',
        summary: 'List the VIP tiers of the account, ascending milestone',
        description:
          'An all-time program: a customer is in the tier with the highest milestone at or below the points ' +
          'they have earned (spending never lowers it), or in none.',
        tags: ['VIP tiers'],
        querystring: VipTiersQuery,
        response: { 200: VipTiersResponse, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request) => ({ vip_tiers: await app.services.vipTiers.list(request.credential!.accountId) }),
  );
};

export default routes;
