import { type Static, Type } from 'typebox';
import { ERROR_STATUS, type ErrorCode, type ErrorDetail } from '../errors.js';

const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];
const EXAMPLE_REQUEST_ID = '5d0a9c1e-4b7f-4f57-9d47-0c2f0f6f3c11';

/**
 * One real answer per code, word for word as the server sends it (the tests check the wording of
 * several), for the examples of the document.
 */
const EXAMPLES: Record<ErrorCode, { message: string; details?: ErrorDetail[] }> = {
  invalid_request: { message: 'the request body must be a JSON object of the documented shape' },
  invalid_parameter: {
    message: 'limit must be an integer from 1 to 250',
    details: [{ field: 'limit', message: 'must be an integer from 1 to 250' }],
  },
  invalid_cursor: {
    message:
      'the cursor was issued for other filters: send the filters of the request it came from; use next_cursor or ' +
      'previous_cursor from an earlier response, unchanged',
  },
  unauthorized: { message: 'the credential is unknown, revoked or expired' },
  insufficient_scope: { message: 'this credential lacks the scope customer:read' },
  oauth_token_required: {
    message: 'this operation accepts only an OAuth access token from an app, not an API key',
  },
  https_required: { message: 'this API is served over HTTPS only' },
  not_found: { message: 'customer 42 does not exist' },
  idempotency_key_reused: {
    message: 'this Idempotency-Key was used with another request in the last 24 hours; use a new key for a new request',
  },
  payload_too_large: { message: 'the request body is larger than 64 KiB' },
  unsupported_media_type: { message: 'the request body must be sent with Content-Type: application/json' },
  insufficient_points: {
    message: 'customer 7 has 150 points: a change of -1000 would take the balance below 0',
  },
  customer_not_member: { message: 'customer 7 is candidate: only members spend points' },
  referral_program_inactive: { message: 'the referral program of this account is not active' },
  reward_already_used: { message: 'reward fulfillment 9 was used at 2026-03-01T12:00:00.000Z' },
  reward_expired: { message: 'reward fulfillment 9 expired at 2026-03-01T12:00:00.000Z' },
  reward_cancelled: { message: 'reward fulfillment 9 is cancelled: it cannot be used' },
  referral_not_allowed: {
    message: 'referral.receiver_customer_email is the email of the customer who refers',
    details: [
      {
        field: 'referral.receiver_customer_email',
        message: 'is the email of the customer who refers',
        reason: 'self_referral',
      },
    ],
  },
  rate_limited: { message: 'rate limit of 10 requests per second exceeded; retry after 1 second' },
  internal_error: { message: 'an internal error occurred; quote the request id when reporting it' },
  unavailable: { message: 'the service is temporarily unavailable; retry shortly' },
};

/** An error body as the server sends it, for a response's example. */
export function errorExample(
  code: ErrorCode,
  example: { message: string; details?: ErrorDetail[] } = EXAMPLES[code],
): { error: { code: ErrorCode; message: string; request_id: string; details?: ErrorDetail[] } } {
  return { error: { code, ...example, request_id: EXAMPLE_REQUEST_ID } };
}

/** The error body of the contract, with `error.code` one of `codes`. */
const errorBodyOf = <const Codes extends ErrorCode[]>(codes: readonly [...Codes]) =>
  Type.Object({
    error: Type.Object({
      code: Type.Enum(codes, {
        type: 'string',
        description: 'Machine-readable error code, one HTTP status each (the contract table)',
      }),
      message: Type.String({ description: 'What went wrong, for a person; the wording may change' }),
      request_id: Type.String({ description: 'Equal to the X-Request-Id response header.' }),
      details: Type.Optional(
        Type.Array(
          Type.Object({
            field: Type.String({ description: 'The failing field: its dotted path in the body, or its name' }),
            message: Type.String({ description: 'What is wrong with it' }),
            reason: Type.Optional(
              Type.String({
                description:
                  'Why a rule refused the request, as a code (`referral_not_allowed`: self_referral, ' +
                  'existing_customer, already_referred, sender_limit)',
              }),
            ),
          }),
          { description: 'Present for validation errors: one entry per failing field.' },
        ),
      ),
    }),
  });

/** The error body of the contract, for every error of every route. */
export const ErrorBody = errorBodyOf(ERROR_CODES);
export type ErrorBody = Static<typeof ErrorBody>;

/**
 * An error response: the contract's body with `error.code` one of the codes this response can
 * carry (so a generated client knows them), its description, and an example of its own. Written
 * out in each response rather than as a `$ref` narrowed by `allOf`: example checkers (Redocly)
 * read an `allOf` branch as closed, and generated clients read the plain object best.
 */
export function errorResponse(
  codes: readonly [ErrorCode, ...ErrorCode[]],
  description: string,
  example: { message: string; details?: ErrorDetail[] } = EXAMPLES[codes[0]],
) {
  // Typed `unknown` for the type provider, as a `$ref` was: the routes that send a body they
  // serialised themselves (an idempotent replay, a cached page) send it as a string or a buffer.
  return Type.Unsafe<unknown>({ ...errorBodyOf(codes), description, examples: [errorExample(codes[0], example)] });
}

/**
 * A response of the contract's error body, for callers that name its codes in the description
 * only ("invalid_parameter: …", "insufficient_points or customer_not_member; …"): the codes are
 * read from the words before the first `:` or `;`.
 */
export const errorRef = (description: string) => {
  const named = (description.split(/[:;]/)[0] ?? '')
    .split(/[\s,]+/)
    .filter((word): word is ErrorCode => word in ERROR_STATUS);
  const [first, ...rest] = named.length > 0 ? named : ERROR_CODES;
  return errorResponse([first as ErrorCode, ...rest], description);
};

/** Error responses shared by the authenticated routes, for the OpenAPI document. */
export const authErrorResponses = {
  401: errorResponse(['unauthorized'], 'unauthorized: missing, unknown, revoked or expired credential'),
  403: errorResponse(
    ['insufficient_scope', 'oauth_token_required', 'https_required'],
    'insufficient_scope, oauth_token_required or https_required',
  ),
  429: errorResponse(
    ['rate_limited'],
    'rate_limited: over the credential rate limit, or too many failed authentications (see Retry-After)',
  ),
  500: errorResponse(['internal_error'], 'internal_error'),
  503: errorResponse(['unavailable'], 'unavailable: overloaded or the database is unreachable (see Retry-After)'),
};

/** The 400 of an operation with a query string: its parameters (and cursor, on a list). */
export const badRequestResponse = errorResponse(
  ['invalid_parameter', 'invalid_cursor', 'invalid_request'],
  'invalid_parameter, invalid_cursor or invalid_request',
);
export const notFoundResponse = errorResponse(['not_found'], 'not_found');
/** The 404 of an operation on one resource, with the message it sends. */
export const notFoundOf = (what: string) =>
  errorResponse(['not_found'], `not_found: no ${what} with this id in the account`, {
    message: `${what} 42 does not exist`,
  });
/** The 400 of an operation with a JSON body. */
export const badBodyResponse = (example: { message: string; details?: ErrorDetail[] }) =>
  errorResponse(['invalid_parameter', 'invalid_request'], 'invalid_parameter or invalid_request', example);
export const payloadTooLargeResponse = errorResponse(
  ['payload_too_large'],
  'payload_too_large: the body is larger than 64 KiB',
);
export const unsupportedMediaTypeResponse = errorResponse(
  ['unsupported_media_type'],
  'unsupported_media_type: the body is not sent as application/json',
);
