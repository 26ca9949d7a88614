import OAuth2Server from '@node-oauth/oauth2-server';
import type { Kysely } from 'kysely';
import type { App, AppsService } from '../apps/service.js';
import { ALL_SCOPES, decodeScopes, encodeScopes, isScope, type Scope } from '../auth/scopes.js';
import { ACCESS_TOKEN_PREFIX, newSecret, sha256Hex } from '../auth/secrets.js';
import type { AuthService } from '../auth/service.js';
import type { Clock } from '../clock.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import type { WebhooksService } from '../webhooks/service.js';
import {
  findCodeByHash,
  findRefreshTokenByHash,
  insertCode,
  insertGrant,
  insertRefreshToken,
  lockLiveGrant,
  markCodeUsed,
  revokeGrant,
  revokeRefreshTokenIfLive,
  revokeRefreshTokensOfGrant,
} from './grants-repository.js';

const { InvalidClientError, InvalidGrantError, InvalidRequestError, InvalidScopeError } = OAuth2Server;

const UNKNOWN_CLIENT = 'Invalid client: no app has this `client_id`';
const WRONG_SECRET =
  'Invalid client: client authentication failed (a confidential app sends its client secret, a public app none)';
/** Host names of this machine: a native app listens there on a port it picks when it runs. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Authorization codes: `oac_` and 40 base62 characters, stored as SHA-256. */
export const CODE_PREFIX = 'oac_';
/** Refresh tokens: `ort_` and 40 base62 characters, stored as SHA-256. */
export const REFRESH_TOKEN_PREFIX = 'ort_';

/** A code is good for 60 seconds (RFC 6749 4.1.2 asks for a short life). */
export const CODE_TTL_SECONDS = 60;
/** Refresh tokens live 30 days; each use replaces the token. */
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
/** Expired codes are kept a day, so a late replay is still recognised as reuse. */
export const CODE_RETENTION_MS = 24 * 3600 * 1000;

/** An S256 code_challenge: base64url of 32 bytes, no padding. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** The client (an app) as the library sees it. `id` is the public client_id. */
export interface OAuthClient extends OAuth2Server.Client {
  id: string;
  appId: number;
  name: string;
  redirectUris: string[];
  grants: string[];
  scopes: Scope[];
  confidential: boolean;
}

/**
 * The "user" the library passes from one model call to the next. Besides the merchant, it
 * carries what a token request has found (the grant; for a refresh, the token being rotated), so
 * saveToken can do its work in one transaction.
 */
export interface OAuthUser extends OAuth2Server.User {
  userId: number;
  accountId: number;
  grantId?: number;
  grantScopes?: Scope[];
  refreshTokenId?: number;
  accessTokenId?: number | null;
}

/** Where a model is used: the authorize endpoint (no client secret involved) or the token endpoint. */
export type ModelPurpose = 'authorize' | 'token';

/** What saveAuthorizationCode received when a dry run reached it: every check passed. */
export interface CheckedAuthorization {
  client: OAuthClient;
  scopes: Scope[];
  redirectUri: string;
}

/**
 * Thrown by the dry-run model instead of saving a code. The library wraps it in a ServerError
 * (`inner`); the service recognises it and knows that the request passed the library's checks.
 */
export class DryRunPassed extends Error {
  constructor(readonly checked: CheckedAuthorization) {
    super('authorization request checked');
  }
}

export interface ModelDeps {
  /** For reads outside a transaction; every write that must be atomic goes through `uow`. */
  db: Kysely<Database>;
  uow: UnitOfWork;
  clock: Clock;
  apps: AppsService;
  /**
   * The access tokens' room. Every transaction here that revokes access tokens runs through its
   * `revocations.around` (the credential cache).
   */
  auth: AuthService;
  /** The webhooks room: a grant's endpoints go with its revocation. */
  webhooks: WebhooksService;
  accessTokenTtlSeconds: number;
}

export type OAuthModel = OAuth2Server.AuthorizationCodeModel & OAuth2Server.RefreshTokenModel;

/** Revokes a grant with its tokens, in one transaction, as a revocation the credential cache sees. */
export function revokeGrantChainNow(
  deps: Pick<ModelDeps, 'uow' | 'auth' | 'webhooks'>,
  grantId: number,
  now: number,
): Promise<void> {
  return deps.auth.revocations.around(() => deps.uow.run((w) => revokeGrantChain(deps, w, grantId), now));
}

/**
 * Revokes a grant and everything descended from it: its refresh tokens, the access tokens issued
 * with them, and the webhook endpoints its app made (with their pending deliveries). The grant row
 * is written first, so it serialises with lockLiveGrant.
 */
async function revokeGrantChain(deps: Pick<ModelDeps, 'auth' | 'webhooks'>, w: Work, grantId: number): Promise<void> {
  await revokeGrant(w.trx, grantId, w.now);
  await deps.auth.revokeGrantAccessTokens(w, grantId);
  await revokeRefreshTokensOfGrant(w.trx, grantId, w.now);
  await deps.webhooks.deleteForGrant(w, grantId);
}

/**
 * The persistence adapter @node-oauth/oauth2-server calls; the grant logic (parameter checks,
 * PKCE, redirect URI and scope rules, error forms) stays in the library.
 *
 * Time: the library checks expiry against the wall clock (`new Date()`), the service uses the
 * injected clock. Stored times are clock times; dates handed to the library are shifted by
 * (wall clock - injected clock), so its `expiresAt < new Date()` means "expired by our clock".
 */
export function createModel(deps: ModelDeps, purpose: ModelPurpose, options: { dryRun?: boolean } = {}): OAuthModel {
  const { db, uow, clock, auth } = deps;
  const toWallClock = (time: number) => new Date(Date.now() + (time - clock.now()));

  const revokeChain = (grantId: number) => revokeGrantChainNow(deps, grantId, clock.now());

  return {
    async getClient(clientId: string, clientSecret: string | null | undefined) {
      if (typeof clientId !== 'string' || clientId.length === 0 || clientId.length > 200) {
        throw new InvalidClientError(UNKNOWN_CLIENT);
      }
      // At the authorize endpoint the client is only identified; at the token endpoint it must
      // authenticate: a confidential app with its secret, a public app (no secret) never with one.
      if (purpose === 'authorize') {
        const app = await deps.apps.findByClientId(clientId);
        if (!app) throw new InvalidClientError(UNKNOWN_CLIENT);
        return toClient(app);
      }
      const checked = await deps.apps.authenticateClient(clientId, clientSecret || undefined);
      if (!checked.ok)
        throw new InvalidClientError(checked.reason === 'unknown_client' ? UNKNOWN_CLIENT : WRONG_SECRET);
      return toClient(checked.app);
    },

    async validateRedirectUri(redirectUri: string, client: OAuth2Server.Client) {
      const app = client as OAuthClient;
      if (app.redirectUris.includes(redirectUri)) return true;
      // RFC 8252 7.3: a public (native) app's loopback redirect URI may use any port.
      return !app.confidential && app.redirectUris.some((registered) => sameLoopbackTarget(registered, redirectUri));
    },

    async validateScope(_user, client, scope) {
      const registered = (client as OAuthClient).scopes;
      // An omitted scope means every scope the app is registered for.
      if (scope === undefined || scope === null) return registered.length > 0 ? [...registered] : false;
      const unknown = scope.filter((name) => !isScope(name));
      if (unknown.length > 0) {
        throw new InvalidScopeError(`Invalid scope: unknown scope ${unknown.join(', ')}`);
      }
      const beyond = scope.filter((name) => !registered.includes(name as Scope));
      if (beyond.length > 0) {
        throw new InvalidScopeError(`Invalid scope: the app is not registered for ${beyond.join(', ')}`);
      }
      return ALL_SCOPES.filter((name) => scope.includes(name));
    },

    async generateAuthorizationCode() {
      return newSecret(CODE_PREFIX);
    },

    async generateAccessToken() {
      return newSecret(ACCESS_TOKEN_PREFIX);
    },

    async generateRefreshToken() {
      return newSecret(REFRESH_TOKEN_PREFIX);
    },

    async saveAuthorizationCode(code, client, user) {
      const app = client as OAuthClient;
      // RFC 7636 is optional in the library; this service requires it of public clients.
      if (!app.confidential && !code.codeChallenge) {
        throw new InvalidRequestError(
          'Invalid request: this app has no client secret, so it must use PKCE: send `code_challenge` (S256)',
        );
      }
      if (code.codeChallenge && !S256_CHALLENGE.test(code.codeChallenge)) {
        throw new InvalidRequestError(
          'Invalid parameter: `code_challenge` must be the base64url SHA-256 of the code verifier (43 characters)',
        );
      }
      const scopes = (code.scope ?? []).filter(isScope);
      if (options.dryRun) throw new DryRunPassed({ client: app, scopes, redirectUri: code.redirectUri });

      const merchant = user as OAuthUser;
      const now = clock.now();
      const expiresAt = now + CODE_TTL_SECONDS * 1000;
      await uow.run(async ({ trx }) => {
        const grant = await insertGrant(trx, {
          account_id: merchant.accountId,
          app_id: app.appId,
          user_id: merchant.userId,
          scopes: encodeScopes(scopes),
          created_at: now,
          revoked_at: null,
        });
        await insertCode(trx, {
          code_hash: sha256Hex(code.authorizationCode),
          grant_id: grant.id,
          redirect_uri: code.redirectUri,
          code_challenge: code.codeChallenge ?? null,
          code_challenge_method: code.codeChallenge ? (code.codeChallengeMethod ?? 'S256') : null,
          created_at: now,
          expires_at: expiresAt,
          used_at: null,
        });
      }, now);
      return { ...code, expiresAt: toWallClock(expiresAt), scope: scopes, client, user };
    },

    async getAuthorizationCode(authorizationCode) {
      if (!authorizationCode.startsWith(CODE_PREFIX) || authorizationCode.length > 200) return false;
      const row = await findCodeByHash(db, sha256Hex(authorizationCode));
      if (!row) return false;
      if (row.used || row.grantRevoked) {
        // RFC 6749 10.5: a code used twice was leaked; revoke what the first use produced.
        await revokeChain(row.grantId);
        return false;
      }
      const grantScopes = decodeScopes(row.scopes);
      const user: OAuthUser = { userId: row.userId, accountId: row.accountId, grantId: row.grantId, grantScopes };
      return {
        authorizationCode,
        codeId: row.id,
        expiresAt: toWallClock(row.expiresAt),
        redirectUri: row.redirectUri,
        scope: grantScopes,
        client: { id: row.clientId, grants: [] },
        user,
        ...(row.codeChallenge
          ? { codeChallenge: row.codeChallenge, codeChallengeMethod: row.codeChallengeMethod ?? 'S256' }
          : {}),
      };
    },

    async revokeAuthorizationCode(code) {
      if (await markCodeUsed(db, code.codeId as number, clock.now())) return true;
      // Two exchanges of one code at once: the loser is a reuse.
      await revokeChain((code.user as OAuthUser).grantId as number);
      return false;
    },

    async getRefreshToken(refreshToken) {
      if (!refreshToken.startsWith(REFRESH_TOKEN_PREFIX) || refreshToken.length > 200) return false;
      const row = await findRefreshTokenByHash(db, sha256Hex(refreshToken));
      if (!row) return false;
      if (row.revoked || row.grantRevoked) {
        // A rotated (or revoked) refresh token presented again: someone holds a copy. Revoke the
        // whole chain, including the tokens the legitimate holder got from rotating it.
        await revokeChain(row.grantId);
        return false;
      }
      const scopes = decodeScopes(row.scopes);
      const user: OAuthUser = {
        userId: row.userId,
        accountId: row.accountId,
        grantId: row.grantId,
        grantScopes: scopes,
        refreshTokenId: row.id,
        accessTokenId: row.accessTokenId,
      };
      return {
        refreshToken,
        refreshTokenExpiresAt: toWallClock(row.expiresAt),
        scope: scopes,
        client: { id: row.clientId, grants: [] },
        user,
      };
    },

    // The rotation itself (revoking this refresh token and its access token) happens in
    // saveToken, in the transaction that issues the new pair: a request that fails on the way
    // (a scope it may not have) then leaves the old token working, and nothing is half done.
    async revokeToken() {
      return true;
    },

    async saveToken(token, client, user) {
      const app = client as OAuthClient;
      const merchant = user as OAuthUser;
      const grantId = merchant.grantId;
      if (grantId === undefined) throw new InvalidGrantError('Invalid grant: no authorization grant');
      // On refresh the library has already refused scopes beyond the original ones; a scope the
      // app has since lost is dropped.
      const scopes = ALL_SCOPES.filter((scope) => (token.scope ?? []).includes(scope) && app.scopes.includes(scope));
      if (scopes.length === 0) throw new InvalidScopeError('Invalid scope: the app is no longer registered for it');
      const now = clock.now();
      const accessExpiresAt = now + deps.accessTokenTtlSeconds * 1000;
      const refreshExpiresAt = now + REFRESH_TOKEN_TTL_SECONDS * 1000;
      const refreshToken = token.refreshToken as string;

      // A refresh revokes the access token it replaces.
      const rotated = merchant.refreshTokenId;
      const write = () =>
        uow.run(async (w) => {
          const { trx } = w;
          if (!(await lockLiveGrant(trx, grantId))) return 'revoked' as const;
          if (rotated !== undefined) {
            if (!(await revokeRefreshTokenIfLive(trx, rotated, now))) return 'reused' as const;
            if (merchant.accessTokenId) await auth.revokeAccessTokenInWork(w, merchant.accessTokenId);
          }
          const accessTokenId = await auth.issueGrantAccessToken(w, {
            grantId,
            accountId: merchant.accountId,
            appId: app.appId,
            token: token.accessToken,
            scopes,
            expiresAt: accessExpiresAt,
          });
          await insertRefreshToken(trx, {
            token_hash: sha256Hex(refreshToken),
            grant_id: grantId,
            access_token_id: accessTokenId,
            // RFC 6749 6: a new refresh token has the scope of the one it replaces.
            scopes: encodeScopes(merchant.grantScopes ?? scopes),
            created_at: now,
            expires_at: refreshExpiresAt,
            revoked_at: null,
          });
          return 'issued' as const;
        }, now);
      const outcome = rotated === undefined ? await write() : await auth.revocations.around(write);
      if (outcome === 'reused') {
        // Another request rotated this refresh token first: a replay. Revoke the chain.
        await revokeChain(grantId);
        throw new InvalidGrantError('Invalid grant: refresh token is invalid');
      }
      if (outcome === 'revoked') throw new InvalidGrantError('Invalid grant: the authorization was revoked');
      return {
        accessToken: token.accessToken,
        accessTokenExpiresAt: toWallClock(accessExpiresAt),
        refreshToken,
        refreshTokenExpiresAt: toWallClock(refreshExpiresAt),
        scope: scopes,
        client,
        user,
      };
    },

    // Required by the library's types; bearer tokens are checked by AuthService instead.
    async getAccessToken() {
      return false;
    },
  };
}

export function toClient(app: App): OAuthClient {
  return {
    id: app.client_id,
    appId: app.id,
    name: app.name,
    redirectUris: app.redirect_uris,
    grants: ['authorization_code', 'refresh_token'],
    scopes: app.scopes,
    confidential: app.confidential,
  };
}

/** True when both are http URIs of the same loopback host, path and query, whatever their ports. */
function sameLoopbackTarget(registered: string, requested: string): boolean {
  let a: URL;
  let b: URL;
  try {
    a = new URL(registered);
    b = new URL(requested);
  } catch {
    return false;
  }
  return (
    a.protocol === 'http:' &&
    b.protocol === 'http:' &&
    LOOPBACK_HOSTS.has(a.hostname) &&
    a.hostname === b.hostname &&
    b.username === '' &&
    b.password === '' &&
    a.pathname === b.pathname &&
    a.search === b.search &&
    b.hash === ''
  );
}
