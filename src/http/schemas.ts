import { type Static, Type } from 'typebox';

/** The error body of the contract, for every error of every route (`Error` in the OpenAPI document). */
export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'Machine-readable error code (see the contract table).' }),
      message: Type.String(),
      request_id: Type.String({ description: 'Equal to the X-Request-Id response header.' }),
      details: Type.Optional(
        Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
          description: 'Present for validation errors: one entry per failing field.',
        }),
      ),
    }),
  },
  {
    $id: 'Error',
    title: 'Error',
    examples: [
      {
        error: {
          code: 'invalid_parameter',
          message: 'limit must be between 1 and 250',
          request_id: '5d0a9c1e-4b7f-4f57-9d47-0c2f0f6f3c11',
          details: [{ field: 'limit', message: 'must be between 1 and 250' }],
        },
      },
    ],
  },
);
export type ErrorBody = Static<typeof ErrorBody>;

/** A response of the contract's error body, described for the OpenAPI document. */
export const errorRef = (description: string) => ({ ...Type.Ref('Error'), description });

/** Error responses shared by the authenticated routes, for the OpenAPI document. */
export const authErrorResponses = {
  401: errorRef('unauthorized: missing, unknown, revoked or expired credential'),
  403: errorRef('insufficient_scope, oauth_token_required or https_required'),
  429: errorRef('rate_limited: over the credential rate limit, or too many failed authentications (see Retry-After)'),
  500: errorRef('internal_error'),
  503: errorRef('unavailable: overloaded or the database is unreachable (see Retry-After)'),
};

export const badRequestResponse = errorRef('invalid_request, invalid_parameter or invalid_cursor');
export const notFoundResponse = errorRef('not_found');
