import { type Insertable, type Kysely, PostgresAdapter, type SelectQueryBuilder } from 'kysely';
import type { Direction } from '../pagination/cursor.js';
import type { CustomerRow, CustomerState, CustomersTable, Database } from '../storage/schema.js';
import type { CustomerSummary } from './schemas.js';

/**
 * Inserts the customer unless the account already has one with its normalised email; returns it
 * when this statement created it, undefined otherwise (never a unique-constraint error).
 */
export async function insertCustomerIfAbsent(
  db: Kysely<Database>,
  customer: Omit<Insertable<CustomersTable>, 'vip_tier_id'> & {
    /** The tier, or a subquery that finds it in the same statement. */
    vip_tier_id?: number | null | SelectQueryBuilder<Database, 'vip_tiers', { id: number }>;
  },
): Promise<CustomerSummary | undefined> {
  const row = await db
    .insertInto('customers')
    .values(customer)
    .onConflict((oc) => oc.columns(['account_id', 'email_normalized']).doNothing())
    .returningAll()
    .executeTakeFirst();
  return row && toSummary(row);
}

/** The account's customer with this normalised (trimmed, lower-cased) email. */
export async function findCustomerByEmail(
  db: Kysely<Database>,
  accountId: number,
  emailNormalized: string,
): Promise<CustomerSummary | undefined> {
  const row = await db
    .selectFrom('customers')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('email_normalized', '=', emailNormalized)
    .executeTakeFirst();
  return row && toSummary(row);
}

/** Every customer of the account, oldest first. */
export async function listCustomers(db: Kysely<Database>, accountId: number): Promise<CustomerSummary[]> {
  const rows = await db.selectFrom('customers').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
  return rows.map(toSummary);
}

/** The account's customer with this id (another account's is not found). */
export async function findCustomer(
  db: Kysely<Database>,
  accountId: number,
  id: number,
): Promise<CustomerRow | undefined> {
  return db
    .selectFrom('customers')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** A customer by id alone (the CLI names customers by id). */
export async function findCustomerById(db: Kysely<Database>, id: number): Promise<CustomerRow | undefined> {
  return db.selectFrom('customers').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * The account's customer, locked until the transaction ends (call inside one): on PostgreSQL
 * `FOR UPDATE`, which also returns the latest committed row; on SQLite every transaction
 * already holds the database's write lock (BEGIN IMMEDIATE, see storage/db.ts).
 */
export async function lockCustomer(
  db: Kysely<Database>,
  accountId: number,
  id: number,
): Promise<CustomerRow | undefined> {
  const rowLocks = db.getExecutor().adapter instanceof PostgresAdapter;
  return db
    .selectFrom('customers')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .$if(rowLocks, (query) => query.forUpdate())
    .executeTakeFirst();
}

export interface CustomerFilters {
  emailNormalized?: string;
  state?: CustomerState;
  updatedAtMin?: number;
}

/** Up to `rows` of the account's customers matching `filters`, beyond `boundary` (see keysetPage). */
export async function findCustomersPage(
  db: Kysely<Database>,
  accountId: number,
  filters: CustomerFilters,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<CustomerRow[]> {
  return db
    .selectFrom('customers')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(filters.emailNormalized !== undefined, (q) => q.where('email_normalized', '=', filters.emailNormalized!))
    .$if(filters.state !== undefined, (q) => q.where('state', '=', filters.state!))
    .$if(filters.updatedAtMin !== undefined, (q) => q.where('updated_at', '>=', filters.updatedAtMin!))
    .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
}

export async function updateCustomerState(
  db: Kysely<Database>,
  id: number,
  state: CustomerState,
  now: number,
): Promise<CustomerRow | undefined> {
  return db
    .updateTable('customers')
    .set({ state, updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

function toSummary(row: CustomerRow): CustomerSummary {
  return { id: row.id, email: row.email, first_name: row.first_name, last_name: row.last_name };
}
