import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { trimBodyEmail } from '../email.js';
import {
  authErrorResponses,
  badBodyResponse,
  errorResponse,
  payloadTooLargeResponse,
  unsupportedMediaTypeResponse,
} from '../http/schemas.js';
import { CreateOrUpdateBody, CustomerIdentityResponse } from './schemas.js';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/v1/customer_identities/create_or_update',
    {
      config: { auth: { scope: 'customer_identity:write', accessTokenOnly: true } },
      // Before validation, so " Jane@X.com " passes the email format; see trimEmail.
      preValidation: trimBodyEmail('customer_identity'),
      schema: {
        operationId: 'createOrUpdateCustomerIdentity',
        summary: 'Create or update a customer identity, linking it to the customer with its email',
        description:
          'Apps only (OAuth access token). A new `distinct_id` creates an identity (201), linked to the ' +
          "account's customer whose email matches (case-insensitively, after trimming), or to a new customer " +
          'made from the identity. An existing `distinct_id` is updated (200): fields sent replace the stored ' +
          'ones, `properties` is merged key by key (null removes a key); the linked customer never changes.',
        tags: ['Customer identities'],
        body: CreateOrUpdateBody,
        response: {
          200: { ...CustomerIdentityResponse, description: 'An existing identity was updated' },
          201: { ...CustomerIdentityResponse, description: 'A new identity was created' },
          400: badBodyResponse({
            message: 'customer_identity.email must match format "email"',
            details: [{ field: 'customer_identity.email', message: 'must match format "email"' }],
          }),
          413: payloadTooLargeResponse,
          415: unsupportedMediaTypeResponse,
          ...authErrorResponses,
          403: errorResponse(
            ['oauth_token_required', 'insufficient_scope', 'https_required'],
            'oauth_token_required (an API key: this operation takes an app access token), insufficient_scope or ' +
              'https_required',
          ),
        },
      },
    },
    async (request, reply) => {
      const accountId = request.credential!.accountId;
      const result = await app.services.customerIdentities.createOrUpdate(accountId, request.body.customer_identity);
      reply.code(result.created ? 201 : 200);
      return { customer_identity: result.identity };
    },
  );
};

export default routes;
