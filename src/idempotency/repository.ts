import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.js';

export interface StoredKey {
  requestHash: string;
  status: number | null;
  body: string | null;
}

/**
 * Claims the account's key for this request: inserts it, or takes over one made at or before `expiredBefore`.
 * True when this transaction now holds the key; false when a live key exists (on PostgreSQL,
 * after waiting for the transaction that claimed it to end).
 */
export async function claimKey(
  db: Kysely<Database>,
  accountId: number,
  key: string,
  requestHash: string,
  now: number,
  expiredBefore: number,
): Promise<boolean> {
  const row = await db
    .insertInto('idempotency_keys')
    .values({ account_id: accountId, key, request_hash: requestHash, status: null, body: null, created_at: now })
    .onConflict((oc) =>
      oc
        .columns(['account_id', 'key'])
        .doUpdateSet({ request_hash: requestHash, status: null, body: null, created_at: now })
        .where('idempotency_keys.created_at', '<=', expiredBefore),
    )
    .returning('key')
    .executeTakeFirst();
  return row !== undefined;
}

export async function findKey(db: Kysely<Database>, accountId: number, key: string): Promise<StoredKey | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'status', 'body'])
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row && { requestHash: row.request_hash, status: row.status, body: row.body };
}

/** Stores the answer of the request that holds the key (in its transaction). */
export async function storeAnswer(
  db: Kysely<Database>,
  accountId: number,
  key: string,
  status: number,
  body: string,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ status, body })
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .execute();
}

/** Deletes every key older than `before`. */
export async function purgeKeys(db: Kysely<Database>, before: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_at', '<=', before).execute();
}
