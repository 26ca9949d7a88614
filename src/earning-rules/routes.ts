import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { VersionedPages } from '../http/page-cache.js';
import { requireDecimalLimit } from '../http/pagination.js';
import { authErrorResponses, badRequestResponse } from '../http/schemas.js';
import { EarningRulesPage, EarningRulesQuery } from './schemas.js';

/** Bytes of serialised pages one app keeps: well over a thousand full 50-rule pages. */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const service = app.services.earningRules;
  // The spec's hottest read: its pages are kept serialised while the account's rules stand.
  const pages = new VersionedPages((accountId) => service.version(accountId), PAGE_CACHE_BYTES);
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
      const accountId = request.credential!.accountId;
      const { query } = request;
      // "No cursor" and any cursor never share a key (an empty cursor is refused by the schema).
      const key = `${query.limit ?? ''}:${query.cursor === undefined ? '-' : `c${query.cursor}`}`;
      const body = await pages.get(
        accountId,
        key,
        async () => reply.serialize(await service.list(accountId, query)) as string,
      );
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );
};

export default routes;
