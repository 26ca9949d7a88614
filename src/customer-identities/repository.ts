import type { Kysely } from 'kysely';
import type { CustomerIdentityRow, CustomerIdentityUpdate, Database, NewCustomerIdentity } from '../storage/schema.js';
import type { CustomerIdentity } from './schemas.js';

/**
 * Updates the identity's plain fields and returns it, or undefined when the account has no
 * identity with this `distinct_id`. Being a write, it is also the lock: on SQLite the statement
 * takes the database write lock (waiting out busy_timeout, which a read-then-write transaction
 * would not), on PostgreSQL it locks the row and returns its latest committed version, so a
 * properties merge that follows in the same transaction cannot lose a concurrent update.
 */
export async function updateIdentityFields(
  db: Kysely<Database>,
  accountId: number,
  distinctId: string,
  fields: CustomerIdentityUpdate,
): Promise<CustomerIdentity | undefined> {
  const row = await db
    .updateTable('customer_identities')
    .set(fields)
    .where('account_id', '=', accountId)
    .where('distinct_id', '=', distinctId)
    .returningAll()
    .executeTakeFirst();
  return row && toCustomerIdentity(row);
}

/** Replaces the stored properties of one identity (already merged by the caller). */
export async function replaceIdentityProperties(
  db: Kysely<Database>,
  id: number,
  properties: Record<string, unknown>,
  now: number,
): Promise<CustomerIdentity> {
  const row = await db
    .updateTable('customer_identities')
    .set({ properties: JSON.stringify(properties), updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toCustomerIdentity(row);
}

/**
 * Inserts the identity unless the account already has its `distinct_id`; returns it when this
 * statement created it, undefined when another request got there first.
 */
export async function insertIdentityIfAbsent(
  db: Kysely<Database>,
  identity: Omit<NewCustomerIdentity, 'properties'> & { properties: Record<string, unknown> },
): Promise<CustomerIdentity | undefined> {
  const row = await db
    .insertInto('customer_identities')
    .values({ ...identity, properties: JSON.stringify(identity.properties) })
    .onConflict((oc) => oc.columns(['account_id', 'distinct_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
  return row && toCustomerIdentity(row);
}

/** Every customer identity of the account, oldest first. */
export async function listIdentities(db: Kysely<Database>, accountId: number): Promise<CustomerIdentity[]> {
  const rows = await db
    .selectFrom('customer_identities')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
  return rows.map(toCustomerIdentity);
}

function toCustomerIdentity(row: CustomerIdentityRow): CustomerIdentity {
  return {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    distinct_id: row.distinct_id,
    properties: JSON.parse(row.properties) as Record<string, unknown>,
    customer_id: row.customer_id,
  };
}
