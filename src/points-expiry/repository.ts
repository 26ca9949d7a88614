import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../storage/schema.js';

/** A customer the expiring job looks at: a balance, and when they were last active. */
export interface IdleCustomer {
  id: number;
  lastActiveAt: number;
  /** The points_expire_at they were last reminded of; null: never reminded. */
  remindedFor: number | null;
}

/**
 * Up to `limit` of the account's members after id `after` (id order) holding points and idle
 * since `idleSince` or longer. Read in id order through the (account_id, id) index: last_active_at
 * has no index of its own (see the migration 2026-11-27T1100-points-expiry).
 */
export async function findIdleCustomers(
  db: Kysely<Database>,
  accountId: number,
  idleSince: number,
  after: number,
  limit: number,
): Promise<IdleCustomer[]> {
  const rows = await db
    .selectFrom('customers')
    .select(['id', 'last_active_at', 'expiry_reminded_for'])
    .where('account_id', '=', accountId)
    .where('id', '>', after)
    .where('state', '=', 'member')
    .where('points_balance', '>', 0)
    .where('last_active_at', '<=', idleSince)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: Number(row.id),
    lastActiveAt: Number(row.last_active_at),
    // The points_expire_at they were last reminded of.
    remindedFor: row.expiry_reminded_for === null ? null : Number(row.expiry_reminded_for),
  }));
}

/** Notes that the customer was reminded that their balance expires at `expiresAt` (once per date). */
export async function markReminded(trx: Transaction<Database>, customerId: number, expiresAt: number): Promise<void> {
  await trx.updateTable('customers').set({ expiry_reminded_for: expiresAt }).where('id', '=', customerId).execute();
}
