import type { Insertable, Kysely } from 'kysely';
import type { AccessTokenRow, AccessTokensTable, ApiKeyRow, ApiKeysTable, Database } from '../storage/schema.js';

export async function insertApiKey(db: Kysely<Database>, key: Insertable<ApiKeysTable>): Promise<ApiKeyRow> {
  return db.insertInto('api_keys').values(key).returningAll().executeTakeFirstOrThrow();
}

export async function findApiKeyByHash(db: Kysely<Database>, hash: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('key_hash', '=', hash).executeTakeFirst();
}

export async function listApiKeys(db: Kysely<Database>, accountId: number): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
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

/** Marks the access token with this id revoked (once); false when it was unknown or already revoked. */
export async function revokeAccessTokenById(db: Kysely<Database>, id: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Revokes every live access token issued under an OAuth grant. */
export async function revokeAccessTokensOfGrant(db: Kysely<Database>, grantId: number, now: number): Promise<void> {
  await db
    .updateTable('access_tokens')
    .set({ revoked_at: now })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
}
