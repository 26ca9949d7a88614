import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authErrorResponses, notFoundResponse } from '../http/schemas.js';
import { ReferralSettingsResponse } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/referral_settings',
    {
      config: { auth: { scope: 'referral_settings:read' } },
      schema: {
        operationId: 'getReferralSettings',
        summary: 'Retrieve the referral program settings of the account',
        tags: ['Referral settings'],
        security: [{ bearerAuth: [] }],
        response: {
          200: ReferralSettingsResponse,
          404: { ...notFoundResponse, description: 'not_found: the account has no referral program' },
          ...authErrorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.credential!.accountId;
      return { referral_settings: await app.services.referralSettings.get(accountId) };
    },
  );
};

export default routes;
