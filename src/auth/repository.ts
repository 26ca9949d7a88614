import type { Insertable, Kysely, Transaction } from 'kysely';
import type { AccessTokenRow, AccessTokensTable, ApiKeyRow, ApiKeysTable, Database } from '../storage/schema.js';

export async function insertApiKey(db: Kysely<Database>, key: Insertable<ApiKeysTable>): Promise<ApiKeyRow> {
  return db.insertInto('api_keys').values(key).returningAll().executeTakeFirstOrThrow();
}

/** What authenticating with an API key reads: the hot path, so only these columns. */
export type ApiKeyAuthRow = Pick<ApiKeyRow, 'id' | 'account_id' | 'scopes' | 'revoked_at' | 'last_used_at'>;

export async function findApiKeyByHash(db: Kysely<Database>, hash: string): Promise<ApiKeyAuthRow | undefined> {
  return db
    .selectFrom('api_keys')
    .select(['id', 'account_id', 'scopes', 'revoked_at', 'last_used_at'])
    .where('key_hash', '=', hash)
    .executeTakeFirst();
}

/** The account's keys, newest first (`asc`: oldest first). */
export async function listApiKeys(
  db: Kysely<Database>,
  accountId: number,
  order: 'asc' | 'desc' = 'desc',
): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('id', order).execute();
}

/**
 * Records that the key was used at `now`, unless a use at or after `since` is recorded already:
 * of processes that race to record one use, one writes (the condition is checked again under
 * the row's lock), so a key's row is written at most once per interval.
 */
export async function recordApiKeyUse(db: Kysely<Database>, id: number, now: number, since: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', since)]))
    .execute();
}

/** The sealed raw key of the account's key `id`, with its hash and when it was made; undefined when there is none. */
export async function findSealedApiKey(
  db: Kysely<Database>,
  accountId: number,
  id: number,
): Promise<{ sealed: string; keyHash: string; createdAt: number } | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(['sealed_key', 'key_hash', 'created_at'])
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('sealed_key', 'is not', null)
    .executeTakeFirst();
  return row?.sealed_key ? { sealed: row.sealed_key, keyHash: row.key_hash, createdAt: row.created_at } : undefined;
}

/** Clears the sealed key if it is still `sealed`; true for the one caller that cleared it. */
export async function clearSealedApiKey(db: Kysely<Database>, id: number, sealed: string): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ sealed_key: null })
    .where('id', '=', id)
    .where('sealed_key', '=', sealed)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Marks the key revoked (once); returns the row, or undefined when there is no such key. */
export async function revokeApiKey(db: Kysely<Database>, id: number, now: number): Promise<ApiKeyRow | undefined> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertAccessToken(
  db: Kysely<Database>,
  token: Insertable<AccessTokensTable>,
): Promise<AccessTokenRow> {
  return db.insertInto('access_tokens').values(token).returningAll().executeTakeFirstOrThrow();
}

export async function findAccessTokenByHash(db: Kysely<Database>, hash: string): Promise<AccessTokenRow | undefined> {
  return db.selectFrom('access_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
}

/** The access token with this hash, with its app's client_id (which names its grant across databases). */
export async function findAccessTokenWithClientId(
  db: Kysely<Database>,
  hash: string,
): Promise<(AccessTokenRow & { client_id: string }) | undefined> {
  return db
    .selectFrom('access_tokens')
    .innerJoin('apps', 'apps.id', 'access_tokens.app_id')
    .selectAll('access_tokens')
    .select('apps.client_id')
    .where('access_tokens.token_hash', '=', hash)
    .executeTakeFirst();
}

export async function revokeAccessTokenByHash(db: Kysely<Database>, hash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('token_hash', '=', hash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** A live access token issued through the `loyalty` command (no OAuth grant), as the console lists it. */
export interface IssuedAccessToken {
  id: number;
  appName: string;
  clientId: string;
  /** The token's scopes, space-separated. */
  scopes: string;
  /** The token's first characters, enough to recognise it. */
  prefix: string;
  createdAt: number;
  expiresAt: number;
}

/** The account's access tokens issued through the CLI that are neither revoked nor expired at `now`, newest first. */
export async function listIssuedAccessTokens(
  db: Kysely<Database>,
  accountId: number,
  now: number,
): Promise<IssuedAccessToken[]> {
  const rows = await db
    .selectFrom('access_tokens')
    .innerJoin('apps', 'apps.id', 'access_tokens.app_id')
    .select([
      'access_tokens.id',
      'apps.name as appName',
      'apps.client_id as clientId',
      'access_tokens.scopes',
      'access_tokens.token_prefix as prefix',
      'access_tokens.created_at as createdAt',
      'access_tokens.expires_at as expiresAt',
    ])
    .where('access_tokens.account_id', '=', accountId)
    .where('access_tokens.grant_id', 'is', null)
    .where('access_tokens.revoked_at', 'is', null)
    .where('access_tokens.expires_at', '>', now)
    .orderBy('access_tokens.id', 'desc')
    .execute();
  return rows.map((row) => ({
    ...row,
    id: Number(row.id),
    createdAt: Number(row.createdAt),
    expiresAt: Number(row.expiresAt),
  }));
}

/** Revokes the account's CLI-issued access token `id` (once); false when it is unknown, another's, revoked or not CLI-issued. */
export async function revokeIssuedAccessToken(
  trx: Transaction<Database>,
  accountId: number,
  id: number,
  now: number,
): Promise<boolean> {
  const result = await trx
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('grant_id', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Marks the access token with this id revoked (once); false when it was unknown or already revoked. */
export async function revokeAccessTokenById(trx: Transaction<Database>, id: number, now: number): Promise<boolean> {
  const result = await trx
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Revokes every live access token issued under an OAuth grant (inside the grant's revocation). */
export async function revokeAccessTokensOfGrant(
  trx: Transaction<Database>,
  grantId: number,
  now: number,
): Promise<void> {
  await trx
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
}
