import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authErrorResponses, errorResponse } from '../http/schemas.js';
import { ReferralSettingsResponse } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/referral_settings',
    {
      config: { auth: { scope: 'referral_settings:read' } },
      schema: {
        operationId: 'getReferralSettings',
        summary: 'Retrieve the referral program settings of the account',
        description:
          'The status of the referral program and the rewards of the referring and the referred customer. ' +
          'An inactive program is still 200, with `status: "inactive"`; an account without one gets 404.',
        tags: ['Referral settings'],
        response: {
          200: { ...ReferralSettingsResponse, description: 'The referral program settings' },
          404: errorResponse(['not_found'], 'not_found: the account has no referral program', {
            message: 'this account has not set up a referral program',
          }),
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
