import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireDecimalLimit } from '../http/pagination.js';
import { authErrorResponses, badRequestResponse } from '../http/schemas.js';
import { EarningRulesPage, EarningRulesQuery } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/earning_rules',
    {
      config: { auth: { scope: 'earning_rule:read' } },
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listEarningRules',
        summary: 'List the enabled earning rules of the account, newest first',
        description:
          'Keyset pages in `id` descending order. Follow `metadata.next_cursor` for older rules and ' +
          '`metadata.previous_cursor` for newer ones; `""` means there is no such page. A cursor may be ' +
          'combined with any `limit`. Rules created or deleted between requests never make another rule ' +
          'appear twice or be skipped.',
        tags: ['Earning rules'],
        querystring: EarningRulesQuery,
        response: {
          200: EarningRulesPage,
          400: badRequestResponse,
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const body = await app.services.earningRules.listSerialised(
        request.credential!.accountId,
        request.query,
        (page) => reply.serialize(page) as string,
      );
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );
};

export default routes;
