import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyContextConfig, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ALL_SCOPES } from '../auth/scopes.js';
import { StringEnum } from '../common-schemas.js';
import type { Config } from '../config.js';
import { toContractError } from '../error-mapping.js';
import { DomainError } from '../errors.js';
import { logFailure } from '../http/errors.js';
import { documentedAs } from '../http/openapi.js';
import { type SessionCookie, setSessionCookie } from '../http/session-cookie.js';
import { consentPage, errorPage, signInPage } from './pages.js';
import { type AuthorizeParams, pickAuthorizeParams } from './params.js';
import {
  type AuthorizeRedirectOrError,
  type EndpointResult,
  GRANT_TYPES,
  requestClientId,
  safeDescription,
} from './service.js';

const SESSION_COOKIE = 'loyalty_oauth_session';
const COOKIE: SessionCookie = { name: SESSION_COOKIE, path: '/oauth2', sameSite: 'lax' };
/** Endpoints that answer RFC 6749 JSON errors; the others are pages and answer HTML. */
const JSON_ENDPOINTS = new Set(['/oauth2/token', '/oauth2/revoke', '/.well-known/oauth-authorization-server']);
const GENERIC_FAILURE = 'The server could not complete the request; try again shortly.';
const CANNOT_CONTINUE = 'This request cannot be completed';

// Every parameter is an optional string: unknown ones are ignored (RFC 6749 3.1), a repeated one
// arrives as an array and fails validation (RFC 6749 3.1: parameters must not repeat).
const Param = (description?: string) => Type.Optional(Type.String({ maxLength: 2048, description }));
const authorizeParams = {
  client_id: Param('The app’s client_id'),
  redirect_uri: Param('Exactly one of the redirect URIs registered for the app'),
  response_type: Param('`code`'),
  scope: Param('Space-separated scopes; omitted: every scope the app is registered for'),
  state: Param('Opaque value returned to the app unchanged (required unless `code_challenge` is sent)'),
  code_challenge: Param('PKCE (RFC 7636): BASE64URL(SHA256(code_verifier)); required for public apps'),
  code_challenge_method: Param('`S256`, required with `code_challenge`; `plain` is refused'),
};
const AuthorizeQuery = Type.Object(authorizeParams);
const csrf = { csrf_token: Param() };
const SignInBody = Type.Object({
  ...authorizeParams,
  ...csrf,
  email: Param(),
  password: Type.Optional(Type.String({ maxLength: 4096 })),
});
const ConsentBody = Type.Object({ ...authorizeParams, ...csrf, decision: Param() });
const SignOutBody = Type.Object({ ...authorizeParams, ...csrf });

const tokenParams = {
  grant_type: Param('`authorization_code` or `refresh_token`'),
  code: Param('The authorization code (grant_type=authorization_code)'),
  redirect_uri: Param('The redirect_uri of the authorization request'),
  code_verifier: Param('PKCE code verifier, when the authorization request had a code_challenge'),
  refresh_token: Param('The refresh token (grant_type=refresh_token)'),
  scope: Param('On refresh: a subset of the original scopes'),
  client_id: Param('Public apps, or confidential apps not using HTTP Basic'),
  client_secret: Param('Confidential apps not using HTTP Basic'),
};
const Required = (description: string) => Type.String({ minLength: 1, maxLength: 2048, description });
const clientCredentials = { client_id: tokenParams.client_id, client_secret: tokenParams.client_secret };
/**
 * What a client sends, for the document: one shape per grant type. The route validates every
 * parameter as an optional string only, so that the OAuth library answers as RFC 6749 5.2 says
 * (`unsupported_grant_type` for another grant type, `invalid_request` for a missing parameter).
 */
const TokenRequest = Type.Union([
  Type.Object(
    {
      grant_type: Type.Literal('authorization_code'),
      code: Required('The authorization code from the redirect'),
      redirect_uri: tokenParams.redirect_uri,
      code_verifier: tokenParams.code_verifier,
      ...clientCredentials,
    },
    { title: 'Authorization code', description: 'Exchange an authorization code (RFC 6749 4.1.3)' },
  ),
  Type.Object(
    {
      grant_type: Type.Literal('refresh_token'),
      refresh_token: Required('The refresh token (`ort_…`); single use'),
      scope: tokenParams.scope,
      ...clientCredentials,
    },
    { title: 'Refresh token', description: 'Refresh an access token (RFC 6749 6)' },
  ),
]);
const TokenBody = documentedAs(Type.Object(tokenParams), TokenRequest);
const TokenResponse = Type.Object({
  access_token: Type.String({ description: '`oa2_…`: the bearer credential for /v1' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds (ACCESS_TOKEN_TTL_SECONDS, default 3600)' }),
  refresh_token: Type.String({ description: '`ort_…`, valid 30 days, single use' }),
  scope: Type.String({ description: 'The granted scopes, space-separated' }),
});
/** RFC 6749 5.2's codes, and the two this server adds for a 5xx and a 429 (RFC 6749 4.1.2.1's names). */
const OAUTH_ERROR_CODES = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'rate_limited',
  'server_error',
  'temporarily_unavailable',
] as const;
/** The body of an error of the token or revocation endpoint (RFC 6749 5.2), with one of `codes`. */
const oauthError = (
  codes: readonly (typeof OAUTH_ERROR_CODES)[number][],
  description: string,
  example: { error: string; error_description: string },
) => ({
  ...Type.Object({
    error: StringEnum([...codes], 'RFC 6749 5.2 error code'),
    error_description: Type.String({ description: 'What went wrong, for the developer' }),
  }),
  description,
  examples: [example],
});
const oauthErrorResponses = {
  400: oauthError(
    ['invalid_request', 'invalid_grant', 'unsupported_grant_type', 'invalid_scope', 'unauthorized_client'],
    'invalid_request, invalid_grant, unsupported_grant_type, invalid_scope or unauthorized_client',
    { error: 'invalid_grant', error_description: 'Invalid grant: authorization code is invalid' },
  ),
  401: oauthError(['invalid_client'], 'invalid_client: the client could not be authenticated', {
    error: 'invalid_client',
    error_description: 'Invalid client: client is invalid',
  }),
  429: oauthError(['rate_limited'], 'rate_limited: too many requests from this client and address (see Retry-After)', {
    error: 'rate_limited',
    error_description: 'rate limit of 10 requests per second exceeded; retry after 1 second',
  }),
  500: oauthError(['server_error'], 'server_error', {
    error: 'server_error',
    error_description: 'The server could not complete the request; try again shortly.',
  }),
  503: oauthError(['temporarily_unavailable'], 'temporarily_unavailable: overloaded or the database is unreachable', {
    error: 'temporarily_unavailable',
    error_description: 'The server could not complete the request; try again shortly.',
  }),
};
const AuthorizationServerMetadata = Type.Object(
  {
    issuer: Type.String({ format: 'uri' }),
    authorization_endpoint: Type.String({ format: 'uri' }),
    token_endpoint: Type.String({ format: 'uri' }),
    revocation_endpoint: Type.String({ format: 'uri' }),
    response_types_supported: Type.Array(Type.String()),
    response_modes_supported: Type.Array(Type.String()),
    grant_types_supported: Type.Array(Type.String()),
    code_challenge_methods_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    authorization_response_iss_parameter_supported: Type.Boolean(),
    service_documentation: Type.String({ format: 'uri' }),
  },
  { $id: 'AuthorizationServerMetadata', description: 'RFC 8414 authorization server metadata' },
);
const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'];
const revokeParams = {
  token: Param('An access token or a refresh token of this app'),
  token_type_hint: Param('Ignored: the token prefix says which it is'),
  client_id: Param('Public apps, or confidential apps not using HTTP Basic'),
  client_secret: Param('Confidential apps not using HTTP Basic'),
};
/** For the document (as TokenRequest): `token` is required (RFC 7009 2.1). */
const RevokeRequest = Type.Object({
  ...revokeParams,
  token: Required('An access token or a refresh token of this app'),
  token_type_hint: Type.Optional(StringEnum(['access_token', 'refresh_token'], 'Ignored: the prefix says which')),
});
const RevokeBody = documentedAs(Type.Object(revokeParams), RevokeRequest);

/**
 * The OAuth 2.0 authorization server: the merchant's pages (sign in, consent) and the app's
 * endpoints (token, revoke). An encapsulated plugin: form bodies, cookies and RFC 6749 error
 * bodies exist here only, so /v1 keeps JSON-only bodies and the contract's error body.
 */
const oauthRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const { oauth, sessions } = app.services;
  await app.register(formbody);
  await app.register(cookie);

  /**
   * The issuer (RFC 8414): PUBLIC_URL, or else the address the request came to, so that a client
   * on `localhost` and one on `127.0.0.1` each find the issuer they asked for.
   */
  const issuerOf = (request: FastifyRequest) => config.publicUrl ?? `${request.protocol}://${request.host}`;

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const domain = toContractError(error);
    logFailure(request, error, domain);
    if (domain.code === 'unavailable') reply.header('retry-after', '1');
    const repeated = repeatedParameter(error, request);
    const message =
      domain.status >= 500
        ? GENERIC_FAILURE
        : domain.code === 'unsupported_media_type'
          ? 'Invalid request: content must be application/x-www-form-urlencoded'
          : repeated !== null
            ? `Invalid request: parameter \`${repeated}\` is repeated (each parameter may be sent once)`
            : domain.message;
    if (JSON_ENDPOINTS.has(request.routeOptions.url ?? '')) {
      const keepsStatus = domain.status >= 500 || domain.code === 'https_required' || domain.code === 'rate_limited';
      const code =
        domain.status === 503
          ? 'temporarily_unavailable'
          : domain.status >= 500
            ? 'server_error'
            : domain.code === 'rate_limited'
              ? 'rate_limited'
              : 'invalid_request';
      reply
        .code(keepsStatus ? domain.status : 400)
        .type('application/json; charset=utf-8')
        .send({ error: code, error_description: safeDescription(message) });
      return;
    }
    sendPage(reply, domain.status, errorPage(CANNOT_CONTINUE, message));
  });

  // The token and revocation endpoints: RATE_LIMIT_PER_SECOND per client and address, counted
  // after the form is read (the client_id may be in it).
  const endpointLimit: FastifyContextConfig =
    config.rateLimitPerSecond === 0
      ? {}
      : {
          rateLimit: {
            max: config.rateLimitPerSecond,
            timeWindow: 1000,
            hook: 'preHandler',
            keyGenerator: (request) =>
              `oauth:${(requestClientId(request.headers, request.body) ?? '-').slice(0, 200)}:${request.ip}`,
            errorResponseBuilder: (_request, context) =>
              new DomainError(
                'rate_limited',
                `rate limit of ${context.max} requests per second exceeded; retry after ${context.after}`,
              ),
          },
        };

  app.get(
    '/.well-known/oauth-authorization-server',
    {
      schema: {
        operationId: 'getAuthorizationServerMetadata',
        tags: ['OAuth'],
        summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
        description:
          'Where the authorization, token and revocation endpoints are and what they support, for clients that ' +
          'discover them. The issuer is PUBLIC_URL when set, else the address the request came to.',
        security: [],
        response: {
          200: { ...AuthorizationServerMetadata, description: 'The metadata' },
          403: oauthError(['invalid_request'], 'https_required: plain HTTP from a client that must use HTTPS', {
            error: 'invalid_request',
            error_description: 'this API is served over HTTPS only',
          }),
          500: oauthErrorResponses[500],
        },
      },
    },
    async (request) => {
      const issuer = issuerOf(request);
      return {
        issuer,
        authorization_endpoint: `${issuer}/oauth2/authorize`,
        token_endpoint: `${issuer}/oauth2/token`,
        revocation_endpoint: `${issuer}/oauth2/revoke`,
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: [...GRANT_TYPES],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
        revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
        scopes_supported: [...ALL_SCOPES],
        authorization_response_iss_parameter_supported: true,
        service_documentation: `${issuer}/docs`,
      };
    },
  );

  app.addHook('onSend', async (_request, reply) => {
    // Codes, tokens and CSRF tokens must not be cached anywhere (RFC 6749 5.1).
    reply.header('cache-control', 'no-store');
    reply.header('pragma', 'no-cache');
  });

  const hidden = { hide: true, tags: ['OAuth'] };

  /** Sends an outcome other than "show the page": a redirect, or an error page. */
  const sendOutcome = (
    request: FastifyRequest,
    reply: FastifyReply,
    outcome: AuthorizeRedirectOrError,
    status: 302 | 303,
  ) => {
    if (outcome.kind === 'redirect') return reply.redirect(withIssuer(outcome.location, issuerOf(request)), status);
    return sendPage(reply, outcome.status, errorPage(CANNOT_CONTINUE, outcome.message));
  };

  const refuseForm = (reply: FastifyReply) =>
    sendPage(
      reply,
      403,
      errorPage(
        'This form has expired',
        'The form was not sent from this page, or your session has ended (cookies must be enabled).',
      ),
    );

  app.get(
    '/oauth2/authorize',
    {
      schema: { ...hidden, summary: 'Authorization endpoint: sign-in and consent pages', querystring: AuthorizeQuery },
    },
    async (request, reply) => {
      const params = pickAuthorizeParams(request.query);
      let session = await sessions.find(request.cookies[SESSION_COOKIE]);
      const outcome = await oauth.check(params, session?.user ?? null);
      if (outcome.kind !== 'ok') return sendOutcome(request, reply, outcome, 302);
      if (!session) {
        session = await sessions.start();
        setSessionCookie(request, reply, COOKIE, session);
      }
      const csrfToken = sessions.csrfToken(session);
      const { appName, scopes, redirectUri } = outcome.request;
      if (!session.user) return sendPage(reply, 200, signInPage({ appName, params, csrfToken }));
      return sendPage(
        reply,
        200,
        consentPage({
          appName,
          scopes,
          user: session.user,
          params,
          csrfToken,
          redirectOrigin: new URL(redirectUri).origin,
        }),
        // Chromium applies form-action to the redirect that follows the form, too.
        [new URL(redirectUri).origin],
      );
    },
  );

  app.post(
    '/oauth2/sign-in',
    { schema: { ...hidden, summary: 'Merchant sign-in (form)', body: SignInBody } },
    async (request, reply) => {
      const body = request.body;
      const params = pickAuthorizeParams(body);
      const session = await sessions.find(request.cookies[SESSION_COOKIE]);
      if (!session || !sessions.checkCsrf(session, body.csrf_token)) return refuseForm(reply);
      const outcome = await oauth.check(params, null);
      if (outcome.kind !== 'ok') return sendOutcome(request, reply, outcome, 303);
      const { appName } = outcome.request;
      const csrfToken = sessions.csrfToken(session);
      const email = (body.email ?? '').trim();
      const password = body.password ?? '';
      const result = await sessions.signInFromForm(session, email, password, request.ip);
      if (result.kind === 'refused') {
        if (result.retryAfterSeconds) reply.header('retry-after', String(result.retryAfterSeconds));
        return sendPage(reply, result.status, signInPage({ appName, params, csrfToken, email, error: result.message }));
      }
      setSessionCookie(request, reply, COOKIE, result.session);
      return reply.redirect(authorizeUrl(params), 303);
    },
  );

  app.post(
    '/oauth2/sign-out',
    { schema: { ...hidden, summary: 'Sign out, to sign in with another account (form)', body: SignOutBody } },
    async (request, reply) => {
      const session = await sessions.find(request.cookies[SESSION_COOKIE]);
      if (!session || !sessions.checkCsrf(session, request.body.csrf_token)) return refuseForm(reply);
      await sessions.end(session);
      setSessionCookie(request, reply, COOKIE, await sessions.start());
      return reply.redirect(authorizeUrl(pickAuthorizeParams(request.body)), 303);
    },
  );

  app.post(
    '/oauth2/authorize',
    { schema: { ...hidden, summary: 'The merchant’s decision on the consent page (form)', body: ConsentBody } },
    async (request, reply) => {
      const body = request.body;
      const params = pickAuthorizeParams(body);
      const session = await sessions.find(request.cookies[SESSION_COOKIE]);
      if (!session || !sessions.checkCsrf(session, body.csrf_token)) return refuseForm(reply);
      // Signed out meanwhile (or the session expired): back to the sign-in page.
      if (!session.user) return reply.redirect(authorizeUrl(params), 303);
      if (body.decision !== 'approve' && body.decision !== 'deny') {
        return sendPage(reply, 400, errorPage(CANNOT_CONTINUE, 'Choose Approve or Deny.'));
      }
      const outcome = await oauth.decide(params, session.user, body.decision === 'approve');
      return sendOutcome(request, reply, outcome, 303);
    },
  );

  app.post(
    '/oauth2/token',
    {
      config: endpointLimit,
      schema: {
        operationId: 'requestToken',
        tags: ['OAuth'],
        summary: 'Token endpoint: exchange a code, or refresh',
        description:
          'RFC 6749 4.1.3 and 6, with PKCE (RFC 7636). Form-encoded. Confidential apps authenticate with HTTP ' +
          'Basic or client_id + client_secret in the body; public apps send client_id and use PKCE.',
        consumes: ['application/x-www-form-urlencoded'],
        body: TokenBody,
        response: { 200: { ...TokenResponse, description: 'The tokens' }, ...oauthErrorResponses },
      },
    },
    async (request, reply) => {
      return sendResult(reply, await oauth.token(request.headers, request.body));
    },
  );

  app.post(
    '/oauth2/revoke',
    {
      config: endpointLimit,
      schema: {
        operationId: 'revokeToken',
        tags: ['OAuth'],
        summary: 'Revocation endpoint (RFC 7009)',
        description:
          'Revokes an access token, or a refresh token together with every token of its grant. ' +
          'Client authentication as at the token endpoint. 200 also for unknown tokens.',
        consumes: ['application/x-www-form-urlencoded'],
        body: RevokeBody,
        response: {
          200: Type.Null({ description: 'Revoked (or nothing to revoke)' }),
          ...oauthErrorResponses,
        },
      },
    },
    async (request, reply) => {
      return sendResult(reply, await oauth.revoke(request.headers, request.body));
    },
  );
};

/** The headers of every page: no framing, no outside resources, forms only to here (and the app). */
function sendPage(reply: FastifyReply, status: number, page: string, formTargets: string[] = []): FastifyReply {
  const formAction = ["'self'", ...formTargets].join(' ');
  return reply
    .code(status)
    .headers({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
    })
    .send(page);
}

/** Sends a token or revocation answer (its body is serialised by the route's response schema). */
function sendResult(reply: FastifyReply, result: EndpointResult): FastifyReply {
  reply.code(result.status).headers(result.headers);
  return result.body === null ? reply.send() : reply.send(result.body);
}

/** RFC 9207: the authorization response names its issuer, so a client can tell servers apart. */
function withIssuer(location: string, issuer: string): string {
  const url = new URL(location);
  url.searchParams.set('iss', issuer);
  return url.toString();
}

/** The parameter a validation error is about when it was sent more than once, or null. */
function repeatedParameter(error: FastifyError, request: FastifyRequest): string | null {
  if (!error.validation) return null;
  const source = (error.validationContext === 'querystring' ? request.query : request.body) as
    | Record<string, unknown>
    | undefined;
  for (const issue of error.validation) {
    const name = issue.instancePath.split('/')[1];
    if (name !== undefined && Array.isArray(source?.[name])) return name;
  }
  return null;
}

/** The authorization endpoint with the request's parameters: where the pages go next. */
function authorizeUrl(params: AuthorizeParams): string {
  return `/oauth2/authorize?${new URLSearchParams(params as Record<string, string>).toString()}`;
}

export default oauthRoutes;
