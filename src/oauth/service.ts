import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import OAuth2Server from '@node-oauth/oauth2-server';
import type { Kysely } from 'kysely';
import type { AppsService } from '../apps/service.js';
import type { Scope } from '../auth/scopes.js';
import { ACCESS_TOKEN_PREFIX, sha256Hex } from '../auth/secrets.js';
import type { AuthService } from '../auth/service.js';
import type { Clock } from '../clock.js';
import { notFound } from '../errors.js';
import type { SessionUser } from '../sessions/service.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork } from '../storage/unit-of-work.js';
import type { WebhooksService } from '../webhooks/service.js';
import {
  type AccountGrant,
  findRefreshTokenByHash,
  hasLiveGrant,
  listLiveGrants,
  pruneCodes,
} from './grants-repository.js';
import {
  CODE_RETENTION_MS,
  CODE_TTL_SECONDS,
  createModel,
  DryRunPassed,
  type ModelDeps,
  type OAuthClient,
  type OAuthModel,
  type OAuthUser,
  REFRESH_TOKEN_PREFIX,
  REFRESH_TOKEN_TTL_SECONDS,
  revokeGrantChainNow,
} from './model.js';
import type { AuthorizeParams } from './params.js';

const { InvalidClientError, InvalidGrantError, InvalidRequestError, OAuthError, Request, Response } = OAuth2Server;

/** The grants this server supports; any other `grant_type` is `unsupported_grant_type`. */
export const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;

interface CodeGrantInstance {
  validateRedirectUri(request: OAuth2Server.Request, code: OAuth2Server.AuthorizationCode): void;
}
// The library exports its extension base class but not the authorization-code grant it ships;
// the subclass below changes only how the redirect_uri check reports its failures.
const LibraryCodeGrant = createRequire(import.meta.url)(
  '@node-oauth/oauth2-server/lib/grant-types/authorization-code-grant-type',
) as new (
  options: unknown,
) => CodeGrantInstance;

/**
 * The library's authorization-code grant, with RFC 6749 5.2's codes for `redirect_uri`: absent
 * when the authorization request had one is `invalid_request` (a parameter is missing); present
 * but different is `invalid_grant` (it does not match the grant).
 */
class CodeGrant extends LibraryCodeGrant {
  override validateRedirectUri(request: OAuth2Server.Request, code: OAuth2Server.AuthorizationCode): void {
    if (!code.redirectUri) return;
    const given = request.body.redirect_uri;
    if (typeof given !== 'string' || given === '') {
      throw new InvalidRequestError(
        'Missing parameter: `redirect_uri` (the authorization request had one: send the same value)',
      );
    }
    if (given !== code.redirectUri) {
      throw new InvalidGrantError('Invalid grant: `redirect_uri` differs from the one of the authorization request');
    }
  }
}

/** An authorization request that passed every check: what the consent page shows. */
export interface CheckedRequest {
  appName: string;
  clientId: string;
  scopes: Scope[];
  redirectUri: string;
}

/**
 * Where an authorization request goes next: the page (sign-in or consent), back to the app
 * (with a code or an RFC 6749 4.1.2.1 error), or an error page when the app cannot be told
 * safely (unknown client, missing or unregistered redirect URI). Internal failures are thrown,
 * for the routes' error handler to map like any other.
 */
export type AuthorizeOutcome =
  | { kind: 'ok'; request: CheckedRequest }
  | { kind: 'redirect'; location: string }
  | { kind: 'error_page'; status: number; message: string };

/** An outcome that leaves the pages: back to the app, or an error page. */
export type AuthorizeRedirectOrError = Exclude<AuthorizeOutcome, { kind: 'ok' }>;

/** An answer of the token or revocation endpoint (an internal failure is thrown instead). */
export interface EndpointResult {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown> | null;
}

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };
/** A placeholder merchant for checking a request before anyone has signed in. */
const NOBODY: OAuthUser = { userId: 0, accountId: 0 };
/** RFC 6749 appendix A.5: state is printable ASCII. */
const VSCHAR = /^[\x20-\x7E]+$/;

type OAuthErrorLike = Error & { code: number; name: string; inner?: unknown };

function isOAuthError(error: unknown): error is OAuthErrorLike {
  return error instanceof OAuthError;
}

/**
 * Rethrows what is not the client's fault (a failure inside the library, a database that cannot
 * be reached), unwrapped from the library's ServerError, so the routes map it like any error.
 */
function throwIfInternal(error: unknown): asserts error is OAuthErrorLike {
  if (!isOAuthError(error)) throw error;
  if (error.code >= 500) throw error.inner ?? error;
}

/**
 * The OAuth 2.0 authorization server (authorization code grant with PKCE, rotating refresh
 * tokens, revocation), built on @node-oauth/oauth2-server: the library does the grant logic,
 * `model.ts` the storage, this class the parts around them (dry-run checks before the pages,
 * safe error redirects, revocation, which the library lacks).
 */
export class OAuthService {
  private readonly server: OAuth2Server;
  private readonly tokenModel: OAuthModel;
  private readonly authorizeModel: OAuthModel;
  private readonly dryRunModel: OAuthModel;
  private readonly apps: AppsService;
  private readonly deps: ModelDeps;

  constructor(
    private readonly db: Kysely<Database>,
    uow: UnitOfWork,
    private readonly clock: Clock,
    apps: AppsService,
    private readonly auth: AuthService,
    private readonly accessTokenTtlSeconds: number,
    webhooks: WebhooksService,
  ) {
    this.apps = apps;
    const deps = { db, uow, clock, apps, auth, webhooks, accessTokenTtlSeconds };
    this.deps = deps;
    this.tokenModel = createModel(deps, 'token');
    this.authorizeModel = createModel(deps, 'authorize');
    this.dryRunModel = createModel(deps, 'authorize', { dryRun: true });
    this.server = new OAuth2Server({
      model: this.tokenModel,
      accessTokenLifetime: accessTokenTtlSeconds,
      refreshTokenLifetime: REFRESH_TOKEN_TTL_SECONDS,
      authorizationCodeLifetime: CODE_TTL_SECONDS,
      // Each refresh returns a new refresh token (rotation, see model.saveToken).
      alwaysIssueNewRefreshToken: true,
      // Public apps refresh with their client_id alone; confidential ones must still authenticate
      // (the token model refuses a confidential app without its secret).
      requireClientAuthentication: { refresh_token: false },
      // `plain` PKCE stays refused (the library's default); `state` may be left out only with a
      // PKCE challenge (RFC 9700 2.1.1), decided per request in runAuthorize.
      allowEmptyState: false,
      extendedGrantTypes: { authorization_code: CodeGrant as unknown as typeof OAuth2Server.AbstractGrantType },
    });
  }

  /** The apps the account has connected (its live grants), newest first. */
  async listGrants(accountId: number): Promise<AccountGrant[]> {
    return listLiveGrants(this.db, accountId);
  }

  /**
   * Disconnects an app: revokes the account's grant with its refresh and access tokens (refused by
   * /v1 at once in this process, within CREDENTIAL_CACHE_MS in the others); `404` when the account
   * has no such live grant.
   */
  async revokeGrant(accountId: number, grantId: number): Promise<void> {
    if (!(await hasLiveGrant(this.db, accountId, grantId))) throw notFound(`connected app ${grantId} does not exist`);
    await revokeGrantChainNow(this.deps, grantId, this.clock.now());
  }

  /**
   * Deletes the authorization codes that expired more than CODE_RETENTION_MS ago (kept that long
   * so a late replay is still recognised as reuse); how many. The server's timed housekeeping.
   */
  async pruneExpiredCodes(): Promise<number> {
    return pruneCodes(this.db, this.clock.now() - CODE_RETENTION_MS);
  }

  /**
   * Runs every check of the library's authorization endpoint without issuing a code, so the
   * pages are shown only for a request that would succeed, and errors reach the app at once.
   */
  async check(params: AuthorizeParams, user: SessionUser | null): Promise<AuthorizeOutcome> {
    const missing = this.missingTarget(params);
    if (missing) return missing;
    const outcome = await this.runAuthorize(params, user ? toOAuthUser(user) : NOBODY, {
      dryRun: true,
      approved: true,
    });
    if (outcome.kind !== 'ok') return outcome;
    // RFC 7636 4.3 makes `plain` the default method; this server allows only S256, so a challenge
    // without its method would be read differently by the app and by us.
    if (params.code_challenge && !params.code_challenge_method) {
      return {
        kind: 'redirect',
        location: errorRedirect(
          outcome.request.redirectUri,
          'invalid_request',
          'Missing parameter: `code_challenge_method` (send S256 with `code_challenge`)',
          echoedState(params),
        ),
      };
    }
    return outcome;
  }

  /** The merchant's decision on the consent page: a redirect with a code, or with access_denied. */
  async decide(params: AuthorizeParams, user: SessionUser, approved: boolean): Promise<AuthorizeRedirectOrError> {
    // Every check of the pages again: the form may not come from them.
    const checked = await this.check(params, user);
    if (checked.kind !== 'ok') return checked;
    const outcome = await this.runAuthorize(params, toOAuthUser(user), { dryRun: false, approved });
    if (outcome.kind === 'ok') throw new Error('only a dry run of the authorization stops before a redirect');
    return outcome;
  }

  /** The token endpoint (RFC 6749 4.1.3 and 6): form parameters in, the library's JSON out. */
  async token(headers: IncomingHttpHeaders, body: unknown): Promise<EndpointResult> {
    const request = formRequest(headers, body);
    const response = new Response();
    try {
      await this.refuseBeforeTheLibrary(request);
      await this.server.token(request, response);
      // The library derives expires_in from the wall clock, a second short now and then.
      return { status: 200, headers: NO_STORE, body: { ...response.body, expires_in: this.accessTokenTtlSeconds } };
    } catch (error) {
      return this.endpointError(error, response.get('www-authenticate') !== undefined);
    }
  }

  /**
   * What the library would answer with another code: a grant type it knows but this server does
   * not offer (it says `unauthorized_client`), and a public app's code exchange without its PKCE
   * verifier (it says `invalid_client`, as if the app had forgotten a secret it does not have).
   */
  private async refuseBeforeTheLibrary(request: OAuth2Server.Request): Promise<void> {
    const form = request.body as Record<string, unknown>;
    const grantType = form.grant_type;
    if (typeof grantType === 'string' && grantType !== '' && !(GRANT_TYPES as readonly string[]).includes(grantType)) {
      throw new OAuth2Server.UnsupportedGrantTypeError(
        `Unsupported grant type: \`${grantType}\` is not offered; use ${GRANT_TYPES.join(' or ')}`,
      );
    }
    const anonymousCodeExchange =
      grantType === 'authorization_code' &&
      request.get('authorization') === undefined &&
      !form.client_secret &&
      !form.code_verifier &&
      typeof form.client_id === 'string' &&
      form.client_id !== '';
    if (anonymousCodeExchange) {
      const app = await this.apps.findByClientId(form.client_id as string);
      if (app && !app.confidential) {
        throw new InvalidGrantError(
          'Missing parameter: `code_verifier` (this app has no client secret, so its codes need the PKCE verifier)',
        );
      }
    }
  }

  /**
   * The revocation endpoint (RFC 7009): the client authenticates like at the token endpoint;
   * an access token is revoked alone, a refresh token with its whole grant. Unknown tokens, and
   * tokens of other apps, are answered 200 too and left alone.
   */
  async revoke(headers: IncomingHttpHeaders, body: unknown): Promise<EndpointResult> {
    const request = formRequest(headers, body);
    const basic = request.get('authorization') !== undefined;
    try {
      if (!request.is(['application/x-www-form-urlencoded'])) {
        return oauthError(400, 'invalid_request', 'Invalid request: content must be application/x-www-form-urlencoded');
      }
      const form = request.body as Record<string, unknown>;
      const credentials = clientCredentials(request.get('authorization'), form);
      if (!credentials) throw new InvalidClientError('Invalid client: send the client credentials');
      const client = (await this.tokenModel.getClient(credentials.id, credentials.secret as string)) as OAuthClient;
      if (typeof form.token !== 'string' || form.token === '') {
        return oauthError(400, 'invalid_request', 'Missing parameter: `token`');
      }
      await this.revokeFor(client, form.token);
      return { status: 200, headers: NO_STORE, body: null };
    } catch (error) {
      return this.endpointError(error, basic);
    }
  }

  private async revokeFor(client: OAuthClient, token: string): Promise<void> {
    if (token.startsWith(ACCESS_TOKEN_PREFIX)) {
      await this.auth.revokeAppAccessToken(token, client.appId);
    } else if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
      const now = this.clock.now();
      const row = await findRefreshTokenByHash(this.db, sha256Hex(token));
      // RFC 7009 2.1: revoking a refresh token revokes the access tokens of the same grant.
      if (row && row.appId === client.appId) await revokeGrantChainNow(this.deps, row.grantId, now);
    }
  }

  /** RFC 6749 3.1.2.4: without a client and a redirect URI to check, nothing may redirect. */
  private missingTarget(params: AuthorizeParams): AuthorizeRedirectOrError | null {
    if (!params.client_id) return { kind: 'error_page', status: 400, message: 'Missing parameter: `client_id`' };
    if (!params.redirect_uri) {
      return {
        kind: 'error_page',
        status: 400,
        message: 'Missing parameter: `redirect_uri` (required; it must be one of the URIs registered for the app)',
      };
    }
    return null;
  }

  private async runAuthorize(
    params: AuthorizeParams,
    user: OAuthUser,
    options: { dryRun: boolean; approved: boolean },
  ): Promise<AuthorizeOutcome> {
    const request = new Request({
      method: options.dryRun ? 'GET' : 'POST',
      headers: {},
      query: { ...params },
      // The library's own switch for a denied consent (it answers access_denied).
      body: options.approved ? {} : { allowed: 'false' },
    });
    const response = new Response();
    try {
      // The options may replace the model (the library merges them over the server's).
      const perCall = {
        model: options.dryRun ? this.dryRunModel : this.authorizeModel,
        authenticateHandler: { handle: async () => user },
        allowEmptyState: params.code_challenge !== undefined,
      } as OAuth2Server.AuthorizeOptions;
      await this.server.authorize(request, response, perCall);
      return { kind: 'redirect', location: response.get('location') as string };
    } catch (error) {
      if (isOAuthError(error) && error.inner instanceof DryRunPassed) {
        const { client, scopes, redirectUri } = error.inner.checked;
        return { kind: 'ok', request: { appName: client.name, clientId: client.id, scopes, redirectUri } };
      }
      throwIfInternal(error);
      // The library sets a Location only once the client and its redirect URI have checked out.
      if (response.get('location') === undefined) {
        return { kind: 'error_page', status: 400, message: error.message };
      }
      // Built here rather than taken from the library, which drops the error from redirect URIs
      // that have a query string.
      const location = errorRedirect(params.redirect_uri as string, error.name, error.message, echoedState(params));
      return { kind: 'redirect', location };
    }
  }

  private endpointError(error: unknown, basic: boolean): EndpointResult {
    throwIfInternal(error);
    // RFC 6749 5.2: a client that tried HTTP Basic gets 401 and a challenge.
    if (error instanceof InvalidClientError && basic) {
      return oauthError(401, error.name, error.message, { 'www-authenticate': 'Basic realm="loyalty"' });
    }
    return oauthError(error.code, error.name, error.message);
  }
}

/** The library's request for a form POST; it reads only these headers. */
function formRequest(headers: IncomingHttpHeaders, body: unknown): OAuth2Server.Request {
  const kept: Record<string, string> = {};
  for (const name of ['authorization', 'content-type', 'content-length', 'transfer-encoding']) {
    const value = headers[name];
    if (typeof value === 'string') kept[name] = value;
  }
  if (kept.authorization !== undefined) kept.authorization = formDecodedBasic(kept.authorization);
  return new Request({ method: 'POST', headers: kept, query: {}, body: body ?? {} });
}

/**
 * RFC 6749 2.3.1: a client form-encodes its id and secret before joining them for HTTP Basic
 * (every `client_id` holds `_`, which standard clients send as `%5F`). The library reads them
 * raw, so they are decoded here; a header that is not such Basic credentials is left as it is.
 */
function formDecodedBasic(authorization: string): string {
  const credentials = basicCredentials(authorization);
  if (!credentials) return authorization;
  try {
    const id = decodeFormComponent(credentials.id);
    const secret = decodeFormComponent(credentials.secret);
    return `Basic ${Buffer.from(`${id}:${secret}`, 'utf8').toString('base64')}`;
  } catch {
    // Malformed percent-encoding: the credentials as sent, which will not authenticate.
    return authorization;
  }
}

function decodeFormComponent(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** The id and secret of an HTTP Basic header, undecoded, or null. */
function basicCredentials(authorization: string): { id: string; secret: string } | null {
  const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(authorization);
  if (!match) return null;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) return null;
  return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/** The request's `state`, when it is fit to send back (RFC 6749 appendix A.5: printable ASCII). */
function echoedState(params: AuthorizeParams): string | undefined {
  return params.state !== undefined && VSCHAR.test(params.state) ? params.state : undefined;
}

function toOAuthUser(user: SessionUser): OAuthUser {
  return { userId: user.userId, accountId: user.accountId };
}

function oauthError(
  status: number,
  error: string,
  description: string,
  headers: Record<string, string> = {},
): EndpointResult {
  return {
    status,
    headers: { ...NO_STORE, ...headers },
    body: { error, error_description: safeDescription(description) },
  };
}

/**
 * RFC 6749 5.2 and 4.1.2.1: `error_description` holds printable ASCII without `"` and `\`.
 * Messages (the library's included) are made to fit: quotes become apostrophes, anything else
 * outside the set a space.
 */
export function safeDescription(description: string): string {
  return description
    .replace(/"/g, "'")
    .replace(/\\/g, '/')
    .replace(/[^\x20-\x7E]/g, ' ');
}

/** The redirect URI with `error`, `error_description` and `state` added to its query. */
export function errorRedirect(redirectUri: string, error: string, description: string, state?: string): string {
  const url = new URL(redirectUri);
  url.searchParams.set('error', error);
  url.searchParams.set('error_description', safeDescription(description));
  if (state !== undefined) url.searchParams.set('state', state);
  return url.toString();
}

/** The client_id a token or revocation request names (HTTP Basic, form-decoded, or the form), or null. */
export function requestClientId(headers: IncomingHttpHeaders, body: unknown): string | null {
  const authorization = typeof headers.authorization === 'string' ? formDecodedBasic(headers.authorization) : undefined;
  const form = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  return clientCredentials(authorization, form)?.id ?? null;
}

/**
 * Client credentials of a revocation request, as the token endpoint reads them (the library's
 * rules): HTTP Basic, else client_id and client_secret in the body, else client_id alone (a
 * public client).
 */
function clientCredentials(
  authorization: string | undefined,
  form: Record<string, unknown>,
): { id: string; secret: string | undefined } | null {
  if (authorization !== undefined) return basicCredentials(authorization);
  if (typeof form.client_id !== 'string' || form.client_id === '') return null;
  const secret = typeof form.client_secret === 'string' && form.client_secret !== '' ? form.client_secret : undefined;
  return { id: form.client_id, secret };
}
