import type { Kysely, Transaction } from 'kysely';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import type { CustomerIdentityRow, Database } from '../storage/schema.js';
import type { CustomerIdentity } from './schemas.js';

/**
 * Updates the identity's plain fields and returns it, or undefined when the account has no
 * identity with this `distinct_id`. Being a write, it is also the lock: on SQLite the statement
 * takes the database write lock (waiting out busy_timeout, which a read-then-write transaction
 * would not), on PostgreSQL it locks the row and returns its latest committed version, so a
 * properties merge that follows in the same transaction cannot lose a concurrent update.
 */
export async function updateIdentityFields(
  db: Transaction<Database>,
  accountId: number,
  distinctId: string,
  fields: IdentityFields,
): Promise<CustomerIdentity | undefined> {
  const first = fields.first_name !== undefined;
  const last = fields.last_name !== undefined;
  const q = updateFieldsQueries;
  const update = first ? (last ? q.both : q.first) : last ? q.last : q.neither;
  const [row] = await update(db, {
    accountId,
    distinctId,
    email: fields.email,
    firstName: fields.first_name ?? null,
    lastName: fields.last_name ?? null,
    now: fields.updated_at,
  });
  return row && toCustomerIdentity(row);
}

/** The fields an update sets: email and time always, a name when it is not undefined. */
export interface IdentityFields {
  email: string;
  first_name?: string | null;
  last_name?: string | null;
  updated_at: number;
}

/** The query of updateIdentityFields that sets the first name, the last name, both or neither. */
const updateFieldsQuery = (first: boolean, last: boolean) =>
  compiledQuery(
    (
      db,
      v: {
        accountId: number;
        distinctId: string;
        email: string;
        firstName: string | null;
        lastName: string | null;
        now: number;
      },
    ) =>
      db
        .updateTable('customer_identities')
        .set({
          email: v.email,
          updated_at: v.now,
          ...(first ? { first_name: v.firstName } : {}),
          ...(last ? { last_name: v.lastName } : {}),
        })
        .where('account_id', '=', v.accountId)
        .where('distinct_id', '=', v.distinctId)
        .returningAll(),
  );

const updateFieldsQueries = {
  neither: updateFieldsQuery(false, false),
  first: updateFieldsQuery(true, false),
  last: updateFieldsQuery(false, true),
  both: updateFieldsQuery(true, true),
};

/** Replaces the stored properties of one identity (already merged by the caller). */
export async function replaceIdentityProperties(
  db: Transaction<Database>,
  id: number,
  properties: Record<string, unknown>,
  now: number,
): Promise<CustomerIdentity> {
  const [row] = await replacePropertiesQuery(db, { id, properties: JSON.stringify(properties), now });
  if (!row) throw new Error(`customer identity ${id} vanished inside its own transaction`);
  return toCustomerIdentity(row);
}

const replacePropertiesQuery = compiledQuery((db, v: { id: number; properties: string; now: number }) =>
  db
    .updateTable('customer_identities')
    .set({ properties: v.properties, updated_at: v.now })
    .where('id', '=', v.id)
    .returningAll(),
);

/**
 * Inserts the identity unless the account already has its `distinct_id`; returns it when this
 * statement created it, undefined when another request got there first.
 */
export async function insertIdentityIfAbsent(
  db: Transaction<Database>,
  identity: Omit<CustomerIdentityRow, 'id' | 'properties'> & { properties: Record<string, unknown> },
): Promise<CustomerIdentity | undefined> {
  const [row] = await insertIdentityQuery(db, { ...identity, properties: JSON.stringify(identity.properties) });
  return row && toCustomerIdentity(row);
}

const insertIdentityQuery = compiledQuery((db, v: Omit<CustomerIdentityRow, 'id'>) =>
  db
    .insertInto('customer_identities')
    .values(
      pick(v, [
        'account_id',
        'customer_id',
        'distinct_id',
        'email',
        'first_name',
        'last_name',
        'properties',
        'created_at',
        'updated_at',
      ]),
    )
    .onConflict((oc) => oc.columns(['account_id', 'distinct_id']).doNothing())
    .returningAll(),
);

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

/** Whether the account has an identity with this distinct_id. */
export async function identityExists(db: Kysely<Database>, accountId: number, distinctId: string): Promise<boolean> {
  const row = await db
    .selectFrom('customer_identities')
    .select('id')
    .where('account_id', '=', accountId)
    .where('distinct_id', '=', distinctId)
    .executeTakeFirst();
  return row !== undefined;
}
