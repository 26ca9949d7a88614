import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import { loadOnce } from '../load-once.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import {
  type ApiKeyAuthRow,
  clearSealedApiKey,
  findAccessTokenByHash,
  findAccessTokenWithClientId,
  findApiKeyByHash,
  findSealedApiKey,
  type IssuedAccessToken,
  insertAccessToken,
  insertApiKey,
  listApiKeys,
  listIssuedAccessTokens,
  recordApiKeyUse,
  revokeAccessTokenByHash,
  revokeAccessTokenById,
  revokeAccessTokensOfGrant,
  revokeApiKey,
  revokeIssuedAccessToken,
} from './repository.js';
import type { TokenRevocations } from './revocations.js';
import { ALL_SCOPES, decodeScopes, encodeScopes, parseScopes, type Scope } from './scopes.js';
import {
  ACCESS_TOKEN_PREFIX,
  API_KEY_PREFIX,
  isCredentialShaped,
  newSecret,
  redact,
  seal,
  sha256Hex,
  unseal,
} from './secrets.js';

/** Who is calling: the credential a request authenticated with. */
export interface Credential {
  kind: 'api_key' | 'access_token';
  /** Row id of the key or token. */
  id: number;
  /**
   * A stable, non-secret name for what is limited, unique across databases so that deployments
   * or test databases sharing one Redis never share counters: part of the credential's hash, or
   * for a token issued through OAuth, of its grant's name (so refreshing gives no new allowance).
   */
  rateLimitKey: string;
  accountId: number;
  /** The app, for access tokens. */
  appId: number | null;
  /**
   * The OAuth grant an access token descends from (deleted with it: its app's webhook endpoints);
   * null for API keys and for tokens the CLI issued. What is the app's is keyed on `appId`, so a
   * token the CLI issued is held to the same rules (docs/decisions.md, "Who an endpoint belongs to").
   */
  grantId: number | null;
  scopes: Scope[];
}

export interface CreatedApiKey {
  id: number;
  key: string;
  scopes: Scope[];
}

export interface ApiKeySummary {
  id: number;
  key: string;
  scopes: Scope[];
  revoked: boolean;
}

/** A key as the console lists it: its summary, name, and when it was made and last used. */
export interface ApiKeyDetails extends ApiKeySummary {
  name: string;
  createdAt: number;
  /** When it was used first in the latest LAST_USED_INTERVAL_MS it was used in, or null (never). */
  lastUsedAt: number | null;
  /** Used within the last LAST_USED_INTERVAL_MS (lastUsedAt is then up to that interval early). */
  usedRecently: boolean;
}

/** What a key made in the console is called when no name is given (and keys made before names). */
export const UNNAMED_KEY = 'Unnamed key';
const MAX_KEY_NAME = 100;

/**
 * How precisely a key's last use is kept: its row is written at most once per this interval
 * (API-key authentication is the hot read path; a write per request would make it a write path).
 * A key used now shows a last use at most this long ago.
 */
export const LAST_USED_INTERVAL_MS = 60 * 60 * 1000;

/** How long after it was made a key sealed for the console can still be shown (once). */
export const REVEAL_WINDOW_MS = 10 * 60 * 1000;

/** What issuing an access token needs to know of an app. */
export interface TokenApp {
  id: number;
  client_id: string;
  scopes: Scope[];
}

/**
 * Finds an app by client_id, or throws `404 not_found`. Passed in by the layer that builds the
 * services, so auth (below apps, which use its scopes and secrets) never imports apps.
 */
export type FindApp = (clientId: string) => Promise<TokenApp>;

export interface IssuedToken {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

/** An access token the OAuth server issues under a grant: the raw value is the library's. */
export interface GrantAccessToken {
  grantId: number;
  accountId: number;
  appId: number;
  token: string;
  scopes: readonly Scope[];
  /** Clock time. */
  expiresAt: number;
}

/**
 * How long a live credential, once read, is trusted without reading it again. Revocation must
 * reach every process within 1 second (the contract); half of that leaves room for the request
 * itself. This process's own revocations take effect at once: API keys are forgotten by
 * `revokeApiKey`, access tokens through TokenRevocations.
 */
export const CREDENTIAL_CACHE_MS = 500;
const CREDENTIAL_CACHE_ENTRIES = 10_000;

/** A credential read live: trusted until `until` (performance.now() time). */
interface Kept {
  credential: Credential;
  until: number;
  /** Access tokens: when the token expires (clock time), and the revocations mark it was read at. */
  expiresAt: number | null;
  revocations: number | null;
}

/** API keys, access tokens, and turning a bearer value into a Credential. */
export class AuthService {
  // By the credential's hash.
  private readonly kept = new Map<string, Kept>();
  private readonly loads = new Map<string, Promise<Credential | null>>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
    private readonly findApp: FindApp,
    private readonly accessTokenTtlSeconds: number,
    readonly revocations: TokenRevocations,
  ) {
    revocations.onStart(() => this.loads.clear());
  }

  /**
   * A new API key for the account; the raw key is in the result and nowhere else, ever, unless
   * `sealFor` is given: then it is also stored encrypted with a key derived from that secret (the
   * console's session cookie) until `revealApiKey` reads it once. `name` is what the merchant
   * calls it (1 to 100 characters; UNNAMED_KEY when absent).
   */
  async createApiKey(
    accountId: number,
    scopes?: string | readonly string[],
    options: { name?: string; sealFor?: string } = {},
  ): Promise<CreatedApiKey> {
    // Both fields checked before either is refused: a form shows every error at once.
    const named = attempt(() => keyName(options.name));
    const scoped = attempt(() => parseScopes(scopes, ALL_SCOPES));
    if ('error' in named || 'error' in scoped) {
      const details = [named, scoped].flatMap((result) => ('error' in result ? (result.error.details ?? []) : []));
      throw new DomainError('invalid_parameter', details.map((d) => `${d.field} ${d.message}`).join('; '), details);
    }
    const name = named.value;
    const granted = scoped.value;
    await this.accounts.require(accountId);
    const key = newSecret(API_KEY_PREFIX);
    const keyHash = sha256Hex(key);
    const row = await this.uow.run(({ trx, now }) =>
      insertApiKey(trx, {
        account_id: accountId,
        key_hash: keyHash,
        key_prefix: redact(key),
        scopes: encodeScopes(granted),
        name,
        created_at: now,
        revoked_at: null,
        ...(options.sealFor === undefined ? {} : { sealed_key: seal(key, options.sealFor, sealContext(keyHash)) }),
      }),
    );
    return { id: row.id, key, scopes: granted };
  }

  /**
   * The raw key of the account's key `id` sealed for `secret` by createApiKey, once: the first
   * call with the secret that sealed it, within REVEAL_WINDOW_MS of its making, gets it and clears
   * it; every other call gets null (shown already, never sealed, too late, or another session).
   */
  async revealApiKey(accountId: number, id: number, secret: string): Promise<string | null> {
    const found = await findSealedApiKey(this.db, accountId, id);
    if (!found) return null;
    if (this.clock.now() - found.createdAt > REVEAL_WINDOW_MS) {
      await clearSealedApiKey(this.db, id, found.sealed);
      return null;
    }
    // Another session's key stays sealed for its own session (a colleague opening the link
    // must not make it unreadable for the one who made it).
    const key = unseal(found.sealed, secret, sealContext(found.keyHash));
    if (key === null || sha256Hex(key) !== found.keyHash) return null;
    return (await clearSealedApiKey(this.db, id, found.sealed)) ? key : null;
  }

  /** The account's keys, oldest first (the `loyalty api-keys list` command's order and shape). */
  async listApiKeys(accountId: number): Promise<ApiKeySummary[]> {
    await this.accounts.require(accountId);
    return (await listApiKeys(this.db, accountId, 'asc')).map((row) => ({
      id: row.id,
      key: row.key_prefix,
      scopes: decodeScopes(row.scopes),
      revoked: row.revoked_at !== null,
    }));
  }

  /** The account's keys, newest first, with their names and when they were made and last used. */
  async apiKeyDetails(accountId: number): Promise<ApiKeyDetails[]> {
    await this.accounts.require(accountId);
    const since = this.clock.now() - LAST_USED_INTERVAL_MS;
    return (await listApiKeys(this.db, accountId, 'desc')).map((row) => ({
      id: row.id,
      key: row.key_prefix,
      scopes: decodeScopes(row.scopes),
      revoked: row.revoked_at !== null,
      name: row.name,
      createdAt: row.created_at,
      lastUsedAt: row.last_used_at,
      usedRecently: row.last_used_at !== null && row.last_used_at >= since,
    }));
  }

  async revokeApiKey(id: number): Promise<{ id: number; revoked: true }> {
    const row = await this.uow.run(({ trx, now }) => revokeApiKey(trx, id, now));
    if (!row) throw notFound(`API key ${id} does not exist`);
    // This process refuses the key at once; the others within CREDENTIAL_CACHE_MS.
    for (const [hash, entry] of this.kept) {
      if (entry.credential.kind === 'api_key' && entry.credential.id === id) this.kept.delete(hash);
    }
    this.loads.clear();
    return { id: row.id, revoked: true };
  }

  /**
   * Issues an access token for an account and app, as if the merchant had approved the app.
   * The scopes must be ones the app is registered for; none named means all of the app's.
   */
  async issueAccessToken(input: {
    accountId: number;
    clientId: string;
    scopes?: string | readonly string[];
    ttlSeconds?: number;
  }): Promise<IssuedToken> {
    const app = await this.findApp(input.clientId);
    await this.accounts.require(input.accountId);
    const requested = parseScopes(input.scopes, app.scopes);
    const beyond = requested.filter((scope) => !app.scopes.includes(scope));
    if (beyond.length > 0) {
      throw invalidParameter('scopes', `are not registered for app ${app.client_id}: ${beyond.join(', ')}`);
    }
    const ttl = input.ttlSeconds ?? this.accessTokenTtlSeconds;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 31_536_000) {
      throw invalidParameter('ttl', 'must be a whole number of seconds from 1 to 31536000');
    }
    const token = newSecret(ACCESS_TOKEN_PREFIX);
    await this.uow.run(({ trx, now }) =>
      insertAccessToken(trx, {
        account_id: input.accountId,
        app_id: app.id,
        token_hash: sha256Hex(token),
        token_prefix: redact(token),
        scopes: encodeScopes(requested),
        created_at: now,
        expires_at: now + ttl * 1000,
        revoked_at: null,
      }),
    );
    return { access_token: token, token_type: 'Bearer', expires_in: ttl, scope: encodeScopes(requested) };
  }

  // The OAuth server's access tokens. Those taking a `Work` write in the caller's transaction (the
  // grant's); a caller that revokes runs that transaction through `revocations.around`, so this
  // process's credential cache sees the revocation.

  /** Issues the access token of an OAuth grant inside the grant's transaction; returns its row id. */
  async issueGrantAccessToken(w: Work, token: GrantAccessToken): Promise<number> {
    const row = await insertAccessToken(w.trx, {
      account_id: token.accountId,
      app_id: token.appId,
      token_hash: sha256Hex(token.token),
      token_prefix: redact(token.token),
      scopes: encodeScopes(token.scopes),
      created_at: w.now,
      expires_at: token.expiresAt,
      revoked_at: null,
      grant_id: token.grantId,
    });
    return row.id;
  }

  /** Revokes the access token `id` inside the caller's transaction; false when it was unknown or already revoked. */
  async revokeAccessTokenInWork(w: Work, id: number): Promise<boolean> {
    return revokeAccessTokenById(w.trx, id, w.now);
  }

  /** Revokes every live access token of an OAuth grant, inside the grant's revocation. */
  async revokeGrantAccessTokens(w: Work, grantId: number): Promise<void> {
    await revokeAccessTokensOfGrant(w.trx, grantId, w.now);
  }

  /**
   * Revokes an access token given its raw value if it was issued to the app `appId` (RFC 7009:
   * a client revokes only its own tokens); false when it is unknown, another app's, or revoked.
   */
  async revokeAppAccessToken(token: string, appId: number): Promise<boolean> {
    const hash = sha256Hex(token);
    const now = this.clock.now();
    const row = await findAccessTokenByHash(this.db, hash);
    if (!row || row.app_id !== appId) return false;
    return this.revocations.around(() => this.uow.run(({ trx }) => revokeAccessTokenByHash(trx, hash, now), now));
  }

  private async loadApiKey(hash: string): Promise<Credential | null> {
    const started = performance.now();
    const row = await findApiKeyByHash(this.db, hash);
    if (!row || row.revoked_at !== null) {
      this.kept.delete(hash);
      return null;
    }
    const credential: Credential = {
      kind: 'api_key',
      id: row.id,
      rateLimitKey: hash.slice(0, 32),
      accountId: row.account_id,
      appId: null,
      grantId: null,
      scopes: decodeScopes(row.scopes),
    };
    // Not awaited: a read must not wait for a write (on SQLite, for another process's write lock).
    void this.recordUse(row);
    this.keep(hash, { credential, until: started + CREDENTIAL_CACHE_MS, expiresAt: null, revocations: null });
    return credential;
  }

  /**
   * Records the key's use when none is recorded within LAST_USED_INTERVAL_MS. Runs only on a live
   * read (at most once per CREDENTIAL_CACHE_MS per key and process), and writes at most once per
   * interval per key across processes. The request does not wait for it; it never throws.
   */
  private async recordUse(row: ApiKeyAuthRow): Promise<void> {
    const now = this.clock.now();
    const since = now - LAST_USED_INTERVAL_MS;
    if (row.last_used_at !== null && row.last_used_at >= since) return;
    try {
      await recordApiKeyUse(this.db, row.id, now, since);
    } catch {
      // The last-used time is a hint for the console: failing to record it must not refuse a
      // valid key (a busy database refuses the request's own work soon enough, with its error).
    }
  }

  private async loadAccessToken(hash: string): Promise<Credential | null> {
    const started = performance.now();
    const mark = this.revocations.mark();
    const row = await findAccessTokenWithClientId(this.db, hash);
    if (!row || row.revoked_at !== null || row.expires_at <= this.clock.now()) {
      this.kept.delete(hash);
      return null;
    }
    const credential: Credential = {
      kind: 'access_token',
      id: row.id,
      rateLimitKey:
        row.grant_id === null ? hash.slice(0, 32) : sha256Hex(`grant:${row.client_id}:${row.grant_id}`).slice(0, 32),
      accountId: row.account_id,
      appId: row.app_id,
      grantId: row.grant_id === null ? null : Number(row.grant_id),
      scopes: decodeScopes(row.scopes),
    };
    // Read across a revocation of this process, it may be the row from before: served, not kept.
    if (this.revocations.noneSince(mark)) {
      this.keep(hash, {
        credential,
        until: started + CREDENTIAL_CACHE_MS,
        expiresAt: row.expires_at,
        revocations: mark,
      });
    }
    return credential;
  }

  /** Trusted from when the read began, so no request relies on it past CREDENTIAL_CACHE_MS. */
  private keep(hash: string, entry: Kept): void {
    if (this.kept.size >= CREDENTIAL_CACHE_ENTRIES) this.kept.clear();
    this.kept.set(hash, entry);
  }

  /**
   * Revokes an access token given its raw value; false when it was unknown or already revoked.
   * (The `loyalty` command's: the server processes forget it within CREDENTIAL_CACHE_MS.)
   */
  async revokeAccessToken(token: string): Promise<boolean> {
    return this.revocations.around(() =>
      this.uow.run(({ trx, now }) => revokeAccessTokenByHash(trx, sha256Hex(token), now)),
    );
  }

  /** The account's live access tokens issued through the `loyalty` command, newest first (the console's Connected apps). */
  async listIssuedAccessTokens(accountId: number): Promise<IssuedAccessToken[]> {
    return listIssuedAccessTokens(this.db, accountId, this.clock.now());
  }

  /** Revokes the account's CLI-issued access token `id`; false when the account has no such live token. */
  async revokeIssuedAccessToken(accountId: number, id: number): Promise<boolean> {
    return this.revocations.around(() =>
      this.uow.run(({ trx, now }) => revokeIssuedAccessToken(trx, accountId, id, now)),
    );
  }

  /**
   * The credential for a bearer value if this process has read it live within CREDENTIAL_CACHE_MS
   * (and, for an access token, it has not expired and this process has revoked no token since),
   * without touching the database; null when it would have to look.
   */
  cached(hash: string): Credential | null {
    const entry = this.kept.get(hash);
    if (entry === undefined || entry.until <= performance.now()) return null;
    if (entry.expiresAt !== null) {
      if (!this.revocations.noneSince(entry.revocations) || entry.expiresAt <= this.clock.now()) return null;
    }
    return entry.credential;
  }

  /**
   * The live credential for a bearer value, or null when it is unknown, revoked or expired
   * (the contract answers all three alike). A value that cannot be a credential is refused
   * without a read. When a busy credential's entry expires, its waiting requests share one read.
   */
  async authenticate(bearer: string, hash = sha256Hex(bearer)): Promise<Credential | null> {
    if (!isCredentialShaped(bearer)) return null;
    const cached = this.cached(hash);
    if (cached) return cached;
    const load = bearer.startsWith(API_KEY_PREFIX) ? () => this.loadApiKey(hash) : () => this.loadAccessToken(hash);
    return loadOnce(this.loads, hash, load);
  }
}

/** A key's name as given: trimmed, 1 to 100 characters, no control characters; UNNAMED_KEY when absent. */
function keyName(name: string | undefined): string {
  if (name === undefined) return UNNAMED_KEY;
  const trimmed = name.trim();
  if (trimmed === '') throw invalidParameter('name', 'is required');
  if ([...trimmed].length > MAX_KEY_NAME) throw invalidParameter('name', `must be at most ${MAX_KEY_NAME} characters`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw invalidParameter('name', 'must not contain control characters');
  return trimmed;
}

/** `run`'s value, or the DomainError it threw (anything else is rethrown). */
function attempt<T>(run: () => T): { value: T } | { error: DomainError } {
  try {
    return { value: run() };
  } catch (error) {
    if (error instanceof DomainError) return { error };
    throw error;
  }
}

/** What a sealed key is bound to: its own hash, so a sealed value cannot be moved to another key. */
function sealContext(keyHash: string): string {
  return `api-key:${keyHash}`;
}

/** The 401 of the contract; `tokenSent` adds `error="invalid_token"`. */
export function unauthorized(message: string, tokenSent: boolean): DomainError {
  const challenge = tokenSent ? 'Bearer realm="loyalty", error="invalid_token"' : 'Bearer realm="loyalty"';
  return new DomainError('unauthorized', message, undefined, { 'WWW-Authenticate': challenge });
}

/** The 403 of the contract for a credential without the route's scope. */
export function insufficientScope(scope: Scope): DomainError {
  return new DomainError('insufficient_scope', `this credential lacks the scope ${scope}`, undefined, {
    'WWW-Authenticate': `Bearer realm="loyalty", error="insufficient_scope", scope="${scope}"`,
  });
}
