import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { trimBodyEmail } from '../email.js';
import { DomainError } from '../errors.js';
import { sendIdempotently } from '../http/idempotent.js';
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
import { fingerprint } from '../idempotency/service.js';
import { IdempotencyHeaders } from '../points-transactions/schemas.js';
import { REFERRAL_CODE_PATTERN } from './code.js';
import {
  CreateReferralBody,
  ReferralCodeParams,
  ReferralParams,
  ReferralResponse,
  ReferralsPage,
  ReferralsQuery,
} from './schemas.js';

const CODE_SHAPE = new RegExp(REFERRAL_CODE_PATTERN);

/** Clicks on referral URLs one address may make per minute; past it, 429. */
const CLICKS_PER_MINUTE = 60;

const NOT_FOUND_PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
  '<title>Referral link not found</title></head><body><h1>This referral link is not valid</h1>' +
  '<p>The link is unknown, or its referral program is not running. Ask your friend for a new one.</p></body></html>';

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/v1/referrals',
    {
      config: { auth: { scope: 'referral:write' } },
      // Before validation, so " Friend@X.com " passes the email format, as in create_or_update.
      preValidation: trimBodyEmail('referral', 'receiver_customer_email'),
      schema: {
        operationId: 'createReferral',
        summary: "Refer a friend with a member's referral code: the friend is rewarded at once",
        description:
          'In one transaction: the friend’s customer is found by email or made (a member), the referral is written ' +
          '`pending` until `window_days` from now, and the friend’s reward is issued (a reward fulfillment with a ' +
          'code, or points). When the friend completes a first qualifying activity within the window, the referral ' +
          'completes and the sender is rewarded. Refusals write nothing: `422 referral_program_inactive`, `422 ' +
          'customer_not_member` (the sender), `422 referral_not_allowed` with `details[0].reason` one of ' +
          '`self_referral`, `existing_customer`, `already_referred`, `sender_limit`. Send an `Idempotency-Key` to ' +
          'retry safely.',
        tags: ['Referrals'],
        headers: IdempotencyHeaders,
        body: CreateReferralBody,
        response: {
          201: { ...ReferralResponse, description: 'The referral, with the friend’s reward' },
          400: badBodyResponse({
            message: 'referral.referral_code names no customer of this account',
            details: [{ field: 'referral.referral_code', message: 'names no customer of this account' }],
          }),
          409: errorResponse(
            ['idempotency_key_reused'],
            'idempotency_key_reused: the Idempotency-Key was used with another request in the last 24 hours',
          ),
          413: payloadTooLargeResponse,
          415: unsupportedMediaTypeResponse,
          422: errorResponse(
            ['referral_not_allowed', 'referral_program_inactive', 'customer_not_member'],
            'referral_not_allowed, referral_program_inactive or customer_not_member; nothing was written',
          ),
          ...authErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const accountId = request.credential!.accountId;
      const idempotent = {
        accountId,
        key: request.headers['idempotency-key'],
        fingerprint: fingerprint('POST /v1/referrals', request.body),
      };
      return sendIdempotently(
        app,
        reply,
        201,
        idempotent,
        (w) => app.services.referrals.create(w, accountId, request.body.referral),
        (referral) => ({ referral }),
      );
    },
  );

  app.get(
    '/v1/referrals',
    {
      config: { auth: { scope: 'referral:read' } },
      preValidation: requireDecimalLimit,
      schema: {
        operationId: 'listReferrals',
        summary: 'List the referrals of the account, newest first',
        description:
          'Keyset pages in `id` descending order. Filters: `sender_customer_id`, `receiver_customer_email`, ' +
          '`status`, `updated_at_min`. A cursor carries its filters: sending it with other filters is ' +
          '`400 invalid_cursor`.',
        tags: ['Referrals'],
        querystring: ReferralsQuery,
        response: { 200: ReferralsPage, 400: badRequestResponse, ...authErrorResponses },
      },
    },
    async (request) => app.services.referrals.page(request.credential!.accountId, request.query),
  );

  app.get(
    '/v1/referrals/:id',
    {
      config: { auth: { scope: 'referral:read' } },
      schema: {
        operationId: 'getReferral',
        summary: 'Retrieve a referral',
        description: "An id the account does not have (another account's included) is `404 not_found`.",
        tags: ['Referrals'],
        params: ReferralParams,
        response: {
          200: { ...ReferralResponse, description: 'The referral' },
          400: badRequestResponse,
          404: notFoundOf('referral'),
          ...authErrorResponses,
        },
      },
    },
    async (request) => ({
      referral: await app.services.referrals.get(request.credential!.accountId, request.params.id),
    }),
  );

  // A customer's referral URL: public, for the friend's browser. Counted, then sent to the store.
  app.get(
    '/r/:code',
    {
      config: {
        rateLimit: {
          max: CLICKS_PER_MINUTE,
          timeWindow: 60_000,
          keyGenerator: (request: { ip: string }) => `referral-clicks:${request.ip}`,
          // The contract's 429 (without it the plugin's own error became a 400 invalid_request).
          errorResponseBuilder: (_request: unknown, context: { max: number; after: string }) =>
            new DomainError(
              'rate_limited',
              `more than ${context.max} referral link clicks a minute from this address; retry after ${context.after}`,
            ),
        },
      },
      schema: { hide: true, params: ReferralCodeParams },
    },
    async (request, reply) => {
      // What is not a code at all is unknown too: the same page, without a look-up.
      const { code } = request.params;
      const landing = CODE_SHAPE.test(code) ? await app.services.referrals.land(code) : null;
      if (!landing) return reply.code(404).type('text/html; charset=utf-8').send(NOT_FOUND_PAGE);
      return reply.redirect(landing.location, 302);
    },
  );
};

export default routes;
