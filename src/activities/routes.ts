import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { trimBodyEmail } from '../email.js';
import {
  authErrorResponses,
  badBodyResponse,
  payloadTooLargeResponse,
  unsupportedMediaTypeResponse,
} from '../http/schemas.js';
import { ActivityResponse, CreateActivityBody } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/v1/activities',
    {
      config: { auth: { scope: 'activity:write' } },
      // Before validation, so " Jane@X.com " passes the email format, as in create_or_update.
      preValidation: trimBodyEmail('activity', 'customer_email'),
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
          400: badBodyResponse({
            message: 'activity.customer_id is required: send exactly one of customer_id and customer_email',
            details: [
              {
                field: 'activity.customer_id',
                message: 'is required: send exactly one of customer_id and customer_email',
              },
            ],
          }),
          413: payloadTooLargeResponse,
          415: unsupportedMediaTypeResponse,
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

export default routes;
