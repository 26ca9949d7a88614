import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authErrorResponses } from '../http/schemas.js';
import { PointsSettingsResponse } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/points_settings',
    {
      config: { auth: { scope: 'points_settings:read' } },
      schema: {
        operationId: 'getPointsSettings',
        summary: 'Retrieve the points settings of the account',
        description: 'What the account calls its points; `Point` / `Points` until the merchant names them.',
        tags: ['Points settings'],
        response: { 200: { ...PointsSettingsResponse, description: 'The points settings' }, ...authErrorResponses },
      },
    },
    async (request) => ({ points_settings: await app.services.pointsSettings.get(request.credential!.accountId) }),
  );
};

export default routes;
