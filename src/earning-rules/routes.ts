import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { invalidParameter } from '../errors.js';
import { authErrorResponses, badRequestResponse } from '../http/schemas.js';
import { PageCache } from './page-cache.js';
import { EarningRulesPage, EarningRulesQuery } from './schemas.js';

/** Bytes of serialised pages one app keeps: well over a thousand full 50-rule pages. */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;

const routes: FastifyPluginAsyncTypebox = async (app) => {
  // One cache per app (and so per database): never shared between apps in one process.
  const pages = new PageCache(PAGE_CACHE_BYTES);

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
      const service = app.services.earningRules;
      // "no cursor" and any cursor never share a key (an empty cursor is refused by the schema).
      const { limit, cursor } = request.query;
      const key = `${accountId}:${limit ?? ''}:${cursor === undefined ? '-' : `c${cursor}`}`;
      // Read the version before the page: the page is then at least as new as the version it is
      // stored under, and a change after this read raises the version and retires the entry.
      const version = await service.rulesVersion(accountId);
      let body = pages.get(key, version);
      if (body === undefined) {
        body = reply.serialize(await service.list(accountId, request.query)) as string;
        pages.set(key, version, body);
      }
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );
};

/**
 * The coercing query validator would read `limit=0x10` as 16 and `limit=1e2` as 100; the limit is
 * a plain decimal number, and anything else is refused rather than guessed at.
 */
async function requireDecimalLimit(request: FastifyRequest): Promise<void> {
  const limit = (request.query as Record<string, unknown>).limit;
  if (typeof limit === 'string' && !/^[0-9]{1,9}$/.test(limit)) {
    throw invalidParameter('limit', 'must be an integer from 1 to 250');
  }
}

export default routes;
