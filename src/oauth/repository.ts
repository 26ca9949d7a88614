import type { Insertable, Kysely } from 'kysely';
import type {
  Database,
  OAuthCodesTable,
  OAuthGrantRow,
  OAuthGrantsTable,
  OAuthRefreshTokensTable,
} from '../storage/schema.js';

// --- Grants and authorization codes -------------------------------------------------------------

export async function insertGrant(db: Kysely<Database>, grant: Insertable<OAuthGrantsTable>): Promise<OAuthGrantRow> {
  return db.insertInto('oauth_grants').values(grant).returningAll().executeTakeFirstOrThrow();
}

export async function insertCode(db: Kysely<Database>, code: Insertable<OAuthCodesTable>): Promise<void> {
  await db.insertInto('oauth_codes').values(code).execute();
}

/** An authorization code with its grant and app, as the token endpoint needs it. */
export interface CodeRecord {
  id: number;
  grantId: number;
  accountId: number;
  userId: number;
  clientId: string;
  scopes: string;
  redirectUri: string;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  expiresAt: number;
  used: boolean;
  grantRevoked: boolean;
}

export async function findCodeByHash(db: Kysely<Database>, codeHash: string): Promise<CodeRecord | undefined> {
  const row = await db
    .selectFrom('oauth_codes as c')
    .innerJoin('oauth_grants as g', 'g.id', 'c.grant_id')
    .innerJoin('apps as a', 'a.id', 'g.app_id')
    .select([
      'c.id',
      'c.grant_id',
      'c.redirect_uri',
      'c.code_challenge',
      'c.code_challenge_method',
      'c.expires_at',
      'c.used_at',
      'g.account_id',
      'g.user_id',
      'g.scopes',
      'g.revoked_at',
      'a.client_id',
    ])
    .where('c.code_hash', '=', codeHash)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    grantId: row.grant_id,
    accountId: row.account_id,
    userId: row.user_id,
    clientId: row.client_id,
    scopes: row.scopes,
    redirectUri: row.redirect_uri,
    codeChallenge: row.code_challenge,
    codeChallengeMethod: row.code_challenge_method,
    expiresAt: row.expires_at,
    used: row.used_at !== null,
    grantRevoked: row.revoked_at !== null,
  };
}

/** Marks the code used; false when it already was (the one statement that makes codes single-use). */
export async function markCodeUsed(db: Kysely<Database>, codeId: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('oauth_codes')
    .set({ used_at: now })
    .where('id', '=', codeId)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Deletes codes that expired before `before` (kept a while after expiry to detect reuse). */
export async function pruneCodes(db: Kysely<Database>, before: number): Promise<void> {
  await db.deleteFrom('oauth_codes').where('expires_at', '<', before).execute();
}

/**
 * Locks the grant's row for the rest of the transaction and tells whether it is still live. A
 * no-op update, because SQLite has no SELECT … FOR UPDATE: on PostgreSQL it takes the row lock,
 * on SQLite the database write lock. A concurrent revocation then either happened before (false)
 * or waits until the tokens this transaction inserts are committed, and revokes them too.
 */
export async function lockLiveGrant(db: Kysely<Database>, grantId: number): Promise<boolean> {
  const result = await db
    .updateTable('oauth_grants')
    .set((eb) => ({ revoked_at: eb.ref('revoked_at') }))
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Revokes a grant and everything descended from it: its refresh tokens and the access tokens
 * issued with them. Call inside a transaction; the grant row is written first, so it serialises
 * with lockLiveGrant.
 */
export async function revokeGrantChain(db: Kysely<Database>, grantId: number, now: number): Promise<void> {
  await db
    .updateTable('oauth_grants')
    .set({ revoked_at: now })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
  await db
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('revoked_at', 'is', null)
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('oauth_refresh_tokens')
        .select('access_token_id')
        .where('grant_id', '=', grantId)
        .where('access_token_id', 'is not', null),
    )
    .execute();
  await db
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: now })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
}

// --- Refresh tokens -----------------------------------------------------------------------------

export async function insertRefreshToken(
  db: Kysely<Database>,
  token: Insertable<OAuthRefreshTokensTable>,
): Promise<void> {
  await db.insertInto('oauth_refresh_tokens').values(token).execute();
}

/** A refresh token with its grant and app. */
export interface RefreshTokenRecord {
  id: number;
  grantId: number;
  accessTokenId: number | null;
  accountId: number;
  userId: number;
  appId: number;
  clientId: string;
  scopes: string;
  expiresAt: number;
  revoked: boolean;
  grantRevoked: boolean;
}

export async function findRefreshTokenByHash(
  db: Kysely<Database>,
  tokenHash: string,
): Promise<RefreshTokenRecord | undefined> {
  const row = await db
    .selectFrom('oauth_refresh_tokens as r')
    .innerJoin('oauth_grants as g', 'g.id', 'r.grant_id')
    .innerJoin('apps as a', 'a.id', 'g.app_id')
    .select([
      'r.id',
      'r.grant_id',
      'r.access_token_id',
      'r.scopes',
      'r.expires_at',
      'r.revoked_at as token_revoked_at',
      'g.account_id',
      'g.user_id',
      'g.app_id',
      'g.revoked_at as grant_revoked_at',
      'a.client_id',
    ])
    .where('r.token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    grantId: row.grant_id,
    accessTokenId: row.access_token_id,
    accountId: row.account_id,
    userId: row.user_id,
    appId: row.app_id,
    clientId: row.client_id,
    scopes: row.scopes,
    expiresAt: row.expires_at,
    revoked: row.token_revoked_at !== null,
    grantRevoked: row.grant_revoked_at !== null,
  };
}

/** Revokes the refresh token; false when it already was (the single-use guarantee of rotation). */
export async function revokeRefreshTokenIfLive(db: Kysely<Database>, id: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
