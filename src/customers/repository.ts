import type { Insertable, Kysely } from 'kysely';
import type { CustomerRow, CustomersTable, Database } from '../storage/schema.js';
import type { Customer } from './schemas.js';

/**
 * Inserts the customer unless the account already has one with its normalised email; returns it
 * when this statement created it, undefined otherwise (never a unique-constraint error).
 */
export async function insertCustomerIfAbsent(
  db: Kysely<Database>,
  customer: Insertable<CustomersTable>,
): Promise<Customer | undefined> {
  const row = await db
    .insertInto('customers')
    .values(customer)
    .onConflict((oc) => oc.columns(['account_id', 'email_normalized']).doNothing())
    .returningAll()
    .executeTakeFirst();
  return row && toCustomer(row);
}

/** The account's customer with this normalised (trimmed, lower-cased) email. */
export async function findCustomerByEmail(
  db: Kysely<Database>,
  accountId: number,
  emailNormalized: string,
): Promise<Customer | undefined> {
  const row = await db
    .selectFrom('customers')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('email_normalized', '=', emailNormalized)
    .executeTakeFirst();
  return row && toCustomer(row);
}

/** Every customer of the account, oldest first. */
export async function listCustomers(db: Kysely<Database>, accountId: number): Promise<Customer[]> {
  const rows = await db.selectFrom('customers').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
  return rows.map(toCustomer);
}

function toCustomer(row: CustomerRow): Customer {
  return { id: row.id, email: row.email, first_name: row.first_name, last_name: row.last_name };
}
