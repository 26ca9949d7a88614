import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireDecimalLimit } from '../http/pagination.js';
import { authErrorResponses, badRequestResponse, notFoundOf } from '../http/schemas.js';
import { EventParams, EventResponse, EventsPage, EventsQuery } from './schemas.js';
import { eventJson } from './service.js';

const JSON_TYPE = 'application/json; charset=utf-8';

const SCOPE_RULE =
  'A credential sees only the event types its scopes can read (each type needs the scope named for it under ' +
  '`webhooks`: `customer.*` needs `customer:read`, `points_transaction.created` `points_transaction:read`, …).';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const service = app.services.events;

  // Both answers are written with eventJson: each event's `data` is spliced in exactly as it was
  // stored at the change, never parsed and serialised again, so the feed shows the same bytes a
  // webhook sends. The response schemas document the shape.
  app.get(
    '/v1/events',
    {
      config: { auth: { scope: 'event:read' } },
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listEvents',
        summary: 'List the events of the account, newest first',
        description:
          'Keyset pages, newest first (by creation order). Filters: `type` (one type or a comma-separated list; ' +
          'an unknown type is `400 invalid_parameter`) and `created_at_min`. A cursor carries its filters: ' +
          `sending it with other filters is \`400 invalid_cursor\`. ${SCOPE_RULE} Events are kept 30 days ` +
          '(`EVENT_RETENTION_DAYS`).',
        tags: ['Events'],
        querystring: EventsQuery,
        response: { 200: EventsPage, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request, reply) => {
      const { accountId, scopes } = request.credential!;
      const page = await service.page(accountId, scopes, request.query);
      const body = `{"events":[${page.items.map(eventJson).join(',')}],"metadata":${JSON.stringify(page.metadata)}}`;
      return reply.type(JSON_TYPE).send(body);
    },
  );

  app.get(
    '/v1/events/:id',
    {
      config: { auth: { scope: 'event:read' } },
      schema: {
        operationId: 'getEvent',
        summary: 'Retrieve an event',
        description: `An id the account does not have (another account's included), or of a type the credential cannot read, is \`404 not_found\`. ${SCOPE_RULE}`,
        tags: ['Events'],
        params: EventParams,
        response: {
          200: { ...EventResponse, description: 'The event' },
          400: badRequestResponse,
          404: notFoundOf('event'),
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const { accountId, scopes } = request.credential!;
      const event = await service.get(accountId, scopes, request.params.id);
      return reply.type(JSON_TYPE).send(`{"event":${eventJson(event)}}`);
    },
  );
};

export default routes;
