import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { throwAttachedValidation } from '../error-mapping.js';
import { requireDecimalLimit } from '../http/pagination.js';
import {
  authErrorResponses,
  badBodyResponse,
  badRequestResponse,
  errorResponse,
  notFoundOf,
  payloadTooLargeResponse,
  unsupportedMediaTypeResponse,
} from '../http/schemas.js';
import {
  CreateWebhookEndpointBody,
  EventResponse,
  ResendBody,
  ResendParams,
  UpdateWebhookEndpointBody,
  WebhookDeliveriesPage,
  WebhookDeliveriesQuery,
  WebhookEndpointParams,
  WebhookEndpointResponse,
  WebhookEndpointsPage,
  WebhookEndpointsQuery,
  WebhookEndpointWithSecretResponse,
} from './schemas.js';
import type { Caller, EndpointOwner } from './service.js';

const TAGS = ['Webhook endpoints'];
const READ = { auth: { scope: 'webhook_endpoint:read' as const } };
const WRITE = { auth: { scope: 'webhook_endpoint:write' as const } };

const bodyErrors = {
  400: badBodyResponse({
    message: 'webhook_endpoint.url must start with https://',
    details: [{ field: 'webhook_endpoint.url', message: 'must start with https://' }],
  }),
  413: payloadTooLargeResponse,
  415: unsupportedMediaTypeResponse,
};
const notFound = notFoundOf('webhook endpoint');
const disabledRefusal = (field: string) =>
  errorResponse(
    ['invalid_parameter', 'invalid_request'],
    'invalid_parameter: the endpoint is disabled (enable it first), or a malformed parameter',
    {
      message: `${field} names webhook endpoint 3, which is disabled: enable it (status "enabled") first`,
      details: [{ field, message: 'names webhook endpoint 3, which is disabled: enable it (status "enabled") first' }],
    },
  );

/**
 * Who asks (docs/decisions.md, "Who an endpoint belongs to"): an app's access token, however it
 * was issued (an OAuth grant, or `loyalty tokens issue`), sees only its app's own endpoints; an
 * endpoint any credential makes is sent only what that credential's scopes can read.
 */
function callerOf(request: FastifyRequest): Caller {
  const credential = request.credential!;
  return credential.kind === 'access_token'
    ? { appId: credential.appId, grantId: credential.grantId, scopes: credential.scopes }
    : { appId: null, grantId: null, scopes: credential.scopes };
}

const ownerOf = (request: FastifyRequest): EndpointOwner => ({
  accountId: request.credential!.accountId,
  ...callerOf(request),
});

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const webhooks = () => app.services.webhooks;

  app.post(
    '/v1/webhook_endpoints',
    {
      config: WRITE,
      schema: {
        operationId: 'createWebhookEndpoint',
        summary: 'Add a webhook endpoint, which is sent the events it names',
        description:
          "The answer holds the endpoint's signing `secret`: the only time it is shown. `url`: https:// only, at " +
          'most 2,048 characters, no credentials, and not a loopback, private, link-local, CGNAT, unspecified, ' +
          'multicast or broadcast address, nor on port 0 or a well-known port of another protocol (22, 25, 6379, …) ' +
          '(`400 invalid_parameter` naming `webhook_endpoint.url`). ' +
          '`enabled_events`: event types, or `["*"]` for all. The endpoint receives only the event types the ' +
          "credential that made it can read (an API key's or an app token's scopes; `400 invalid_parameter` when " +
          "none is left). One made with an app's access token belongs to that app: only the app sees it, and it is " +
          'deleted when the app is disconnected. At most 20 endpoints per account (the 21st is `400 invalid_parameter`).',
        tags: TAGS,
        body: CreateWebhookEndpointBody,
        response: {
          201: { ...WebhookEndpointWithSecretResponse, description: 'The endpoint, with its secret (shown this once)' },
          ...bodyErrors,
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const endpoint = await webhooks().create(ownerOf(request), request.body.webhook_endpoint);
      return reply.code(201).send({ webhook_endpoint: endpoint });
    },
  );

  app.get(
    '/v1/webhook_endpoints',
    {
      config: READ,
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listWebhookEndpoints',
        summary: 'List the webhook endpoints of the account, newest first',
        description:
          "Keyset pages in `id` descending order, with the cursors of every list. An app's token lists only the " +
          'endpoints its app made. Secrets are never listed.',
        tags: TAGS,
        querystring: WebhookEndpointsQuery,
        response: { 200: WebhookEndpointsPage, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request) => webhooks().list(request.credential!.accountId, request.query, callerOf(request)),
  );

  app.get(
    '/v1/webhook_endpoints/:id',
    {
      config: READ,
      schema: {
        operationId: 'getWebhookEndpoint',
        summary: 'Retrieve a webhook endpoint',
        description:
          "An id the account does not have (another account's, or for an app's token one its app did not make) is " +
          '`404 not_found`. The secret is never shown again.',
        tags: TAGS,
        params: WebhookEndpointParams,
        response: {
          200: { ...WebhookEndpointResponse, description: 'The endpoint' },
          400: badRequestResponse,
          404: notFound,
          ...authErrorResponses,
        },
      },
    },
    async (request) => ({
      webhook_endpoint: await webhooks().get(request.credential!.accountId, request.params.id, callerOf(request)),
    }),
  );

  app.patch(
    '/v1/webhook_endpoints/:id',
    {
      config: WRITE,
      schema: {
        operationId: 'updateWebhookEndpoint',
        summary: 'Change a webhook endpoint',
        description:
          'Any of `url`, `description`, `enabled_events` and `status`, checked as on create. `status: disabled` ' +
          'stops its deliveries (pending ones wait); `status: enabled` resumes them at once. Changing `url` or ' +
          "`enabled_events` narrows what it receives to what this credential's scopes can read too.",
        tags: TAGS,
        params: WebhookEndpointParams,
        body: UpdateWebhookEndpointBody,
        response: {
          200: { ...WebhookEndpointResponse, description: 'The endpoint after the change' },
          ...bodyErrors,
          404: notFound,
          ...authErrorResponses,
        },
      },
    },
    async (request) => ({
      webhook_endpoint: await webhooks().update(ownerOf(request), request.params.id, request.body.webhook_endpoint),
    }),
  );

  app.delete(
    '/v1/webhook_endpoints/:id',
    {
      config: WRITE,
      schema: {
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint',
        description: 'Deletes the endpoint, its delivery log and its pending deliveries. Answers `204` with no body.',
        tags: TAGS,
        params: WebhookEndpointParams,
        response: {
          204: Type.Null({ description: 'The endpoint was deleted' }),
          400: badRequestResponse,
          404: notFound,
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      await webhooks().delete(request.credential!.accountId, request.params.id, callerOf(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/v1/webhook_endpoints/:id/rotate_secret',
    {
      config: WRITE,
      schema: {
        operationId: 'rotateWebhookEndpointSecret',
        summary: "Replace a webhook endpoint's signing secret",
        description:
          'The answer holds the new `secret`, shown this once. For 24 hours the old secret keeps signing beside ' +
          'the new one (two signatures in `webhook-signature`), so a receiver can switch without losing a delivery.',
        tags: TAGS,
        params: WebhookEndpointParams,
        response: {
          200: { ...WebhookEndpointWithSecretResponse, description: 'The endpoint, with its new secret' },
          400: badRequestResponse,
          404: notFound,
          ...authErrorResponses,
        },
      },
    },
    async (request) => ({
      webhook_endpoint: await webhooks().rotateSecret(
        request.credential!.accountId,
        request.params.id,
        callerOf(request),
      ),
    }),
  );

  app.post(
    '/v1/webhook_endpoints/:id/test',
    {
      config: WRITE,
      schema: {
        operationId: 'sendWebhookEndpointTest',
        summary: 'Send a test event to a webhook endpoint',
        description:
          'Records a `ping` event (data `{}`) and sends it to this endpoint only, as any delivery (signed, ' +
          'retried, logged). Answers `202` with the event; a disabled endpoint is `400 invalid_parameter`.',
        tags: TAGS,
        params: WebhookEndpointParams,
        response: {
          202: { ...EventResponse, description: 'The test event, queued for delivery' },
          400: disabledRefusal('id'),
          404: notFound,
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const event = await webhooks().sendTest(request.credential!.accountId, request.params.id, callerOf(request));
      return reply.code(202).send({ event });
    },
  );

  app.get(
    '/v1/webhook_endpoints/:id/deliveries',
    {
      config: READ,
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: "List a webhook endpoint's delivery attempts, newest first",
        description:
          'The delivery log: each attempt with its time, duration, status code or error, the first 1 KiB of ' +
          'the answer, and what followed it (`outcome`): for a failed attempt whose delivery is retried, ' +
          '`next_attempt_at` says when. The attempts of a resend are numbered from 1 with `trigger` `resend`. ' +
          'Filter `event_id` (`evt_…`). A cursor carries its filters: sending it with other filters is ' +
          '`400 invalid_cursor`.',
        tags: TAGS,
        params: WebhookEndpointParams,
        querystring: WebhookDeliveriesQuery,
        response: { 200: WebhookDeliveriesPage, 400: badRequestResponse, 404: notFound, ...authErrorResponses },
      },
    },
    async (request) =>
      webhooks().deliveries(request.credential!.accountId, request.params.id, request.query, callerOf(request)),
  );

  app.post(
    '/v1/events/:id/resend',
    {
      config: WRITE,
      // The body's field stands at its top level: its failures are invalid_parameter, by name.
      attachValidation: true,
      schema: {
        operationId: 'resendEvent',
        summary: 'Send an event to a webhook endpoint again',
        description:
          'A new delivery of the event (`evt_…`) to the endpoint named, whatever its type and whether or not the ' +
          'endpoint subscribes to it, with its own retries; its attempts show in the delivery log numbered from 1, ' +
          'with `trigger` `resend`. An event or endpoint the account does not have is ' +
          "`404 not_found`, and so is an event the credential's scopes cannot read or the endpoint may not be " +
          "sent, and, for an app's token, an endpoint its app did not make; a disabled endpoint is " +
          '`400 invalid_parameter`. Answers `202` with no body.',
        tags: TAGS,
        params: ResendParams,
        body: ResendBody,
        response: {
          // No body: the delivery is queued, and shows in the endpoint's delivery log once attempted.
          202: Type.Null({ description: 'The delivery is queued; no body' }),
          400: disabledRefusal('webhook_endpoint_id'),
          404: errorResponse(['not_found'], 'not_found: no such event or webhook endpoint in the account', {
            message: 'event evt_4bX9zQpL2mN7rT5vW8yK1cD3 does not exist',
          }),
          413: payloadTooLargeResponse,
          415: unsupportedMediaTypeResponse,
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      if (request.validationError) throwAttachedValidation(request.validationError);
      await webhooks().resend(
        request.credential!.accountId,
        request.params.id,
        request.body.webhook_endpoint_id,
        callerOf(request),
      );
      // Nothing to serialise: `undefined` sends an empty body (`null` would send the text "null").
      return reply.code(202).send(undefined as unknown as null);
    },
  );
};

export default routes;
