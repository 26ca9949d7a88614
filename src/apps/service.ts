import type { Kysely } from 'kysely';
import { ALL_SCOPES, decodeScopes, encodeScopes, parseScopes, type Scope } from '../auth/scopes.js';
import { CLIENT_SECRET_PREFIX, digestsEqual, newSecret, randomBase62, sha256Hex } from '../auth/secrets.js';
import { invalidParameter, notFound } from '../errors.js';
import type { AppRow, Database } from '../storage/schema.js';
import type { UnitOfWork } from '../storage/unit-of-work.js';
import { findAppByClientId, insertApp, listApps } from './repository.js';

/** A registered app, as listings show it (never its secret). */
export interface App {
  id: number;
  name: string;
  client_id: string;
  scopes: Scope[];
  redirect_uris: string[];
  /** False for a public client, which must use PKCE. */
  confidential: boolean;
}

/** A new app with its client secret: the only time the secret is shown. */
export interface CreatedApp extends App {
  client_secret: string | null;
}

/**
 * Whether a client authenticated (RFC 6749 2.3): a confidential app with its secret, a public app
 * with none. The secret's hash never leaves this room.
 */
export type ClientAuthentication = { ok: true; app: App } | { ok: false; reason: 'unknown_client' | 'wrong_secret' };

export interface CreateAppInput {
  name: string;
  scopes?: string | readonly string[];
  redirectUris?: readonly string[];
  /** A public client has no secret and must use PKCE. */
  public?: boolean;
}

/** Third-party apps that act for merchants with OAuth access tokens. */
export class AppsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
  ) {}

  async create(input: CreateAppInput): Promise<CreatedApp> {
    const name = input.name.trim();
    if (name.length === 0 || name.length > 255) throw invalidParameter('name', 'must be 1 to 255 characters');
    const scopes = parseScopes(input.scopes, ALL_SCOPES);
    const redirectUris = [...new Set(input.redirectUris ?? [])];
    for (const uri of redirectUris) validateRedirectUri(uri);
    const clientSecret = input.public ? null : newSecret(CLIENT_SECRET_PREFIX);
    const row = await this.uow.run(({ trx, now }) =>
      insertApp(trx, {
        name,
        client_id: `app_${randomBase62(24)}`,
        client_secret_hash: clientSecret === null ? null : sha256Hex(clientSecret),
        scopes: encodeScopes(scopes),
        redirect_uris: JSON.stringify(redirectUris),
        created_at: now,
      }),
    );
    return { ...toApp(row), client_secret: clientSecret };
  }

  async list(): Promise<App[]> {
    return (await listApps(this.db)).map(toApp);
  }

  /** The app with this client id, or null. */
  async findByClientId(clientId: string): Promise<App | null> {
    const row = await findAppByClientId(this.db, clientId);
    return row ? toApp(row) : null;
  }

  /** The app with this client id, or `404 not_found`. */
  async requireByClientId(clientId: string): Promise<App> {
    const app = await this.findByClientId(clientId);
    if (!app) throw notFound(`app with client_id ${clientId} does not exist`);
    return app;
  }

  /** Checks a client's credentials: `secret` undefined for a public client (or one that sent none). */
  async authenticateClient(clientId: string, secret: string | undefined): Promise<ClientAuthentication> {
    const row = await findAppByClientId(this.db, clientId);
    if (!row) return { ok: false, reason: 'unknown_client' };
    const hash = row.client_secret_hash;
    const matches =
      hash === null ? secret === undefined : secret !== undefined && digestsEqual(sha256Hex(secret), hash);
    return matches ? { ok: true, app: toApp(row) } : { ok: false, reason: 'wrong_secret' };
  }
}

function toApp(row: AppRow): App {
  return {
    id: row.id,
    name: row.name,
    client_id: row.client_id,
    scopes: decodeScopes(row.scopes),
    redirect_uris: JSON.parse(row.redirect_uris) as string[],
    confidential: row.client_secret_hash !== null,
  };
}

/** Redirect URIs are absolute, without a fragment, and HTTPS unless they point at this machine. */
function validateRedirectUri(uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw invalidParameter('redirect_uri', `"${uri}" is not an absolute URL`);
  }
  if (url.hash !== '' || uri.includes('#')) throw invalidParameter('redirect_uri', 'must not have a fragment');
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw invalidParameter('redirect_uri', 'must use https (http only for localhost)');
  }
}
