/** The error codes of the API contract, each with its one HTTP status. */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_parameter: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  oauth_token_required: 403,
  https_required: 403,
  not_found: 404,
  idempotency_key_reused: 409,
  reward_already_used: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  insufficient_points: 422,
  customer_not_member: 422,
  referral_program_inactive: 422,
  referral_not_allowed: 422,
  reward_expired: 422,
  reward_cancelled: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  field: string;
  message: string;
  /** Why a rule refused the request, as a code (a referral's `self_referral`, …). */
  reason?: string;
}

/**
 * An error the API reports to its caller. Domain code throws it and knows nothing about HTTP;
 * the error handler maps `code` to a status and writes the contract's body.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra response headers (WWW-Authenticate, Retry-After). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'DomainError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

/** A validation failure of one field: `400 invalid_parameter` naming it. */
export function invalidParameter(field: string, message: string): DomainError {
  return new DomainError('invalid_parameter', `${field} ${message}`, [{ field, message }]);
}

export function notFound(message: string): DomainError {
  return new DomainError('not_found', message);
}
