import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { authErrorResponses, badRequestResponse, errorRef } from '../http/schemas.js';
import { ActivityResponse, CreateActivityBody } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/v1/activities',
    {
      config: { auth: { scope: 'activity:write' } },
      // Before validation, so " Jane@X.com " passes the email format, as in create_or_update.
      preValidation: async (request) => trimCustomerEmail(request),
      schema: {
        operationId: 'createActivity',
        summary: 'Record an activity: what a customer did, evaluated against the earning rules',
        description:
          'In one transaction: the activity is recorded and every enabled earning rule bound to its token is ' +
          'evaluated in ascending id (VIP restriction, earning limit, points), each rule that gives points ' +
          'crediting one points transaction. Only member customers earn. A token and `distinct_id` seen before ' +
          'answer 200 with the earlier activity and credit nothing.',
        tags: ['Activities'],
        body: CreateActivityBody,
        response: {
          200: { ...ActivityResponse, description: 'The activity with this token and distinct_id, recorded earlier' },
          201: { ...ActivityResponse, description: 'The activity was recorded, with what it credited' },
          400: badRequestResponse,
          413: errorRef('payload_too_large: the body is larger than 64 KiB'),
          415: errorRef('unsupported_media_type: the body is not sent as application/json'),
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const result = await app.services.activities.record(request.credential!.accountId, request.body.activity);
      reply.code(result.created ? 201 : 200);
      return { activity: result.activity };
    },
  );
};

function trimCustomerEmail(request: FastifyRequest): void {
  const activity = (request.body as { activity?: unknown } | null | undefined)?.activity;
  if (typeof activity !== 'object' || activity === null || Array.isArray(activity)) return;
  const email = (activity as Record<string, unknown>).customer_email;
  if (typeof email === 'string') (activity as Record<string, unknown>).customer_email = email.trim();
}

export default routes;
