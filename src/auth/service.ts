import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import { loadOnce } from '../load-once.js';
import type { Database } from '../storage/schema.js';
import {
  findAccessTokenWithClientId,
  findApiKeyByHash,
  insertAccessToken,
  insertApiKey,
  listApiKeys,
  revokeAccessTokenByHash,
  revokeApiKey,
} from './repository.js';
import type { TokenRevocations } from './revocations.js';
import { ALL_SCOPES, decodeScopes, encodeScopes, parseScopes, type Scope } from './scopes.js';
import { ACCESS_TOKEN_PREFIX, API_KEY_PREFIX, isCredentialShaped, newSecret, redact, sha256Hex } from './secrets.js';

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
export class CredentialsService {
  // By the credential's hash.
  private readonly kept = new Map<string, Kept>();
  private readonly loads = new Map<string, Promise<Credential | null>>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
    private readonly findApp: FindApp,
    private readonly accessTokenTtlSeconds: number,
    private readonly revocations: TokenRevocations,
  ) {
    revocations.onStart(() => this.loads.clear());
  }

  /** A new API key for the account; the raw key is in the result and nowhere else, ever. */
  async createApiKey(accountId: number, scopes?: string | readonly string[]): Promise<CreatedApiKey> {
    const granted = parseScopes(scopes, ALL_SCOPES);
    await this.accounts.require(accountId);
    const key = newSecret(API_KEY_PREFIX);
    const row = await insertApiKey(this.db, {
      account_id: accountId,
      key_hash: sha256Hex(key),
      key_prefix: redact(key),
      scopes: encodeScopes(granted),
      created_at: this.clock.now(),
      revoked_at: null,
    });
    return { id: row.id, key, scopes: granted };
  }

  async listApiKeys(accountId: number): Promise<ApiKeySummary[]> {
    await this.accounts.require(accountId);
    return (await listApiKeys(this.db, accountId)).map((row) => ({
      id: row.id,
      key: row.key_prefix,
      scopes: decodeScopes(row.scopes),
      revoked: row.revoked_at !== null,
    }));
  }

  async revokeApiKey(id: number): Promise<{ id: number; revoked: true }> {
    const row = await revokeApiKey(this.db, id, this.clock.now());
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
    const now = this.clock.now();
    await insertAccessToken(this.db, {
      account_id: input.accountId,
      app_id: app.id,
      token_hash: sha256Hex(token),
      token_prefix: redact(token),
      scopes: encodeScopes(requested),
      created_at: now,
      expires_at: now + ttl * 1000,
      revoked_at: null,
    });
    return { access_token: token, token_type: 'Bearer', expires_in: ttl, scope: encodeScopes(requested) };
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
      scopes: decodeScopes(row.scopes),
    };
    this.keep(hash, { credential, until: started + CREDENTIAL_CACHE_MS, expiresAt: null, revocations: null });
    return credential;
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
    return this.revocations.around(() => revokeAccessTokenByHash(this.db, sha256Hex(token), this.clock.now()));
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
