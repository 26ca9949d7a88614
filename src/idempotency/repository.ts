import type { Kysely, Transaction } from 'kysely';
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
  trx: Transaction<Database>,
  accountId: number,
  key: string,
  requestHash: string,
  now: number,
  expiredBefore: number,
): Promise<boolean> {
  const row = await trx
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
  trx: Transaction<Database>,
  accountId: number,
  key: string,
  status: number,
  body: string,
): Promise<void> {
  await trx
    .updateTable('idempotency_keys')
    .set({ status, body })
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .execute();
}

/** Deletes every key made before `before`; how many it deleted. */
export async function purgeKeys(trx: Transaction<Database>, before: number): Promise<number> {
  const result = await trx.deleteFrom('idempotency_keys').where('created_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
