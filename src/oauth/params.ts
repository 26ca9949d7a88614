/** The parameters of an authorization request (RFC 6749 4.1.1, RFC 7636 4.3); others are ignored. */
export const AUTHORIZE_PARAMS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
] as const;
export type AuthorizeParams = Partial<Record<(typeof AUTHORIZE_PARAMS)[number], string>>;

/** The authorization parameters found in a query or form body (strings only). */
export function pickAuthorizeParams(source: unknown): AuthorizeParams {
  const params: AuthorizeParams = {};
  if (typeof source !== 'object' || source === null) return params;
  for (const name of AUTHORIZE_PARAMS) {
    const value = (source as Record<string, unknown>)[name];
    if (typeof value === 'string' && value !== '') params[name] = value;
  }
  return params;
}
