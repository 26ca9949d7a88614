import type { Insertable, Kysely, Transaction } from 'kysely';
import type {
  Database,
  OAuthCodesTable,
  OAuthGrantRow,
  OAuthGrantsTable,
  OAuthRefreshTokensTable,
} from '../storage/schema.js';

// Grants, their authorization codes and refresh tokens.

/** A merchant's approval of an app, as the console lists it. */
export interface AccountGrant {
  id: number;
  appName: string;
  clientId: string;
  /** The approved scopes, space-separated. */
  scopes: string;
  /** Who approved it. */
  userEmail: string;
  createdAt: number;
}

/** The account's live (unrevoked) grants, newest first. */
export async function listLiveGrants(db: Kysely<Database>, accountId: number): Promise<AccountGrant[]> {
  const rows = await db
    .selectFrom('oauth_grants')
    .innerJoin('apps', 'apps.id', 'oauth_grants.app_id')
    .innerJoin('users', 'users.id', 'oauth_grants.user_id')
    .select([
      'oauth_grants.id',
      'apps.name as appName',
      'apps.client_id as clientId',
      'oauth_grants.scopes',
      'users.email as userEmail',
      'oauth_grants.created_at as createdAt',
    ])
    .where('oauth_grants.account_id', '=', accountId)
    .where('oauth_grants.revoked_at', 'is', null)
    .orderBy('oauth_grants.id', 'desc')
    .execute();
  return rows.map((row) => ({ ...row, id: Number(row.id), createdAt: Number(row.createdAt) }));
}

/** True when the account has this live grant. */
export async function hasLiveGrant(db: Kysely<Database>, accountId: number, grantId: number): Promise<boolean> {
  const row = await db
    .selectFrom('oauth_grants')
    .select('id')
    .where('id', '=', grantId)
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** Inserts a grant, in the transaction that inserts its first code. */
export async function insertGrant(
  trx: Transaction<Database>,
  grant: Insertable<OAuthGrantsTable>,
): Promise<OAuthGrantRow> {
  return trx.insertInto('oauth_grants').values(grant).returningAll().executeTakeFirstOrThrow();
}

export async function insertCode(trx: Transaction<Database>, code: Insertable<OAuthCodesTable>): Promise<void> {
  await trx.insertInto('oauth_codes').values(code).execute();
}

/** What a code or a refresh token takes from its grant: whose it is, and whether it still stands. */
export interface GrantPart {
  grantId: number;
  accountId: number;
  userId: number;
  appId: number;
  clientId: string;
  grantRevoked: boolean;
}

/** The grant's columns, for a query that joins `oauth_grants as g` and `apps as a`. */
const GRANT_COLUMNS = [
  'g.id as grant_id',
  'g.account_id',
  'g.user_id',
  'g.app_id',
  'g.revoked_at as grant_revoked_at',
  'a.client_id',
] as const;

function grantPart(row: {
  grant_id: number;
  account_id: number;
  user_id: number;
  app_id: number;
  grant_revoked_at: number | null;
  client_id: string;
}): GrantPart {
  return {
    grantId: row.grant_id,
    accountId: row.account_id,
    userId: row.user_id,
    appId: row.app_id,
    clientId: row.client_id,
    grantRevoked: row.grant_revoked_at !== null,
  };
}

/** An authorization code with its grant and app, as the token endpoint needs it. */
export interface CodeRecord extends GrantPart {
  id: number;
  scopes: string;
  redirectUri: string;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  expiresAt: number;
  used: boolean;
}

export async function findCodeByHash(db: Kysely<Database>, codeHash: string): Promise<CodeRecord | undefined> {
  const row = await db
    .selectFrom('oauth_codes as c')
    .innerJoin('oauth_grants as g', 'g.id', 'c.grant_id')
    .innerJoin('apps as a', 'a.id', 'g.app_id')
    .select([
      ...GRANT_COLUMNS,
      'c.id',
      'c.redirect_uri',
      'c.code_challenge',
      'c.code_challenge_method',
      'c.expires_at',
      'c.used_at',
      'g.scopes',
    ])
    .where('c.code_hash', '=', codeHash)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    ...grantPart(row),
    id: row.id,
    scopes: row.scopes,
    redirectUri: row.redirect_uri,
    codeChallenge: row.code_challenge,
    codeChallengeMethod: row.code_challenge_method,
    expiresAt: row.expires_at,
    used: row.used_at !== null,
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

/** Deletes codes that expired before `before` (kept a while after expiry to detect reuse); how many. */
export async function pruneCodes(db: Kysely<Database>, before: number): Promise<number> {
  const result = await db.deleteFrom('oauth_codes').where('expires_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Locks the grant's row for the rest of the transaction and tells whether it is still live. A
 * no-op update, because SQLite has no SELECT … FOR UPDATE: on PostgreSQL it takes the row lock,
 * on SQLite the database write lock. A concurrent revocation then either happened before (false)
 * or waits until the tokens this transaction inserts are committed, and revokes them too.
 */
export async function lockLiveGrant(trx: Transaction<Database>, grantId: number): Promise<boolean> {
  const result = await trx
    .updateTable('oauth_grants')
    .set((eb) => ({ revoked_at: eb.ref('revoked_at') }))
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Marks the grant revoked: the first write of its revocation, so it serialises with lockLiveGrant
 * (its access and refresh tokens are revoked next, in the same transaction).
 */
export async function revokeGrant(trx: Transaction<Database>, grantId: number, now: number): Promise<void> {
  await trx
    .updateTable('oauth_grants')
    .set({ revoked_at: now })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Revokes every live refresh token of the grant (inside the grant's revocation). */
export async function revokeRefreshTokensOfGrant(
  trx: Transaction<Database>,
  grantId: number,
  now: number,
): Promise<void> {
  await trx
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: now })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
}

// --- Refresh tokens -----------------------------------------------------------------------------

/** Inserts a refresh token, in the transaction that issues it with its access token. */
export async function insertRefreshToken(
  trx: Transaction<Database>,
  token: Insertable<OAuthRefreshTokensTable>,
): Promise<void> {
  await trx.insertInto('oauth_refresh_tokens').values(token).execute();
}

/** A refresh token with its grant and app. */
export interface RefreshTokenRecord extends GrantPart {
  id: number;
  accessTokenId: number | null;
  scopes: string;
  expiresAt: number;
  revoked: boolean;
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
      ...GRANT_COLUMNS,
      'r.id',
      'r.access_token_id',
      'r.scopes',
      'r.expires_at',
      'r.revoked_at as token_revoked_at',
    ])
    .where('r.token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    ...grantPart(row),
    id: row.id,
    accessTokenId: row.access_token_id,
    scopes: row.scopes,
    expiresAt: row.expires_at,
    revoked: row.token_revoked_at !== null,
  };
}

/** Revokes the refresh token; false when it already was (the single-use guarantee of rotation). */
export async function revokeRefreshTokenIfLive(trx: Transaction<Database>, id: number, now: number): Promise<boolean> {
  const result = await trx
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
