import { type Kysely, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import type { Direction } from '../pagination/cursor.js';
import { sinceCondition, sincePlan, unindexed } from '../pagination/since.js';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import { isPostgres } from '../storage/dialect.js';
import type { CustomerRow, CustomerState, Database } from '../storage/schema.js';
import { type StoredPlacement, toStoredPlacement } from '../vip-tiers/periods.js';
import type { CustomerSummary } from './schemas.js';

/** A customer as stored, in the domain's names (the service turns it into the API's form). */
export interface StoredCustomer extends StoredPlacement {
  readonly id: number;
  readonly accountId: number;
  readonly email: string;
  readonly firstName: string | null;
  readonly lastName: string | null;
  readonly state: CustomerState;
  readonly dateOfBirth: string | null;
  readonly pointsBalance: number;
  readonly pointsEarned: number;
  /** The referral code (a member's; null for a customer who never was one). */
  readonly referralCode: string | null;
  /** When their last points transaction or activity was recorded; null: never. */
  readonly lastActiveAt: number | null;
  /** The points_expire_at (ms) their last points-expiry reminder told of; null: none yet. */
  readonly expiryRemindedFor: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** What a new customer is inserted with. */
export type NewCustomer = Pick<
  CustomerRow,
  | 'account_id'
  | 'email'
  | 'email_normalized'
  | 'first_name'
  | 'last_name'
  | 'referral_code'
  | 'created_at'
  | 'updated_at'
>;

/**
 * Inserts the customer unless the account already has one with its normalised email; returns it
 * when this statement created it, undefined otherwise (never a unique-constraint error). It starts
 * in no VIP tier: the caller places it (vip-tiers owns the rule), in the same transaction.
 */
export async function insertCustomerIfAbsent(
  trx: Transaction<Database>,
  customer: NewCustomer,
): Promise<StoredCustomer | undefined> {
  const [row] = await insertCustomerQuery(trx, customer);
  return row && toStoredCustomer(row);
}

const insertCustomerQuery = compiledQuery((db, v: NewCustomer) =>
  db
    .insertInto('customers')
    .values(
      pick(v, [
        'account_id',
        'email',
        'email_normalized',
        'first_name',
        'last_name',
        'referral_code',
        'created_at',
        'updated_at',
      ]),
    )
    .onConflict((oc) => oc.columns(['account_id', 'email_normalized']).doNothing())
    .returningAll(),
);

/** The account's customer with this normalised (trimmed, lower-cased) email. */
export async function findCustomerByEmail(
  db: Kysely<Database>,
  accountId: number,
  emailNormalized: string,
): Promise<CustomerSummary | undefined> {
  const customer = await findStoredCustomerByEmail(db, accountId, emailNormalized);
  return (
    customer && { id: customer.id, email: customer.email, first_name: customer.firstName, last_name: customer.lastName }
  );
}

/** The customer with this referral code, in any account (codes are unique across all of them). */
export async function findCustomerByReferralCode(
  db: Kysely<Database>,
  code: string,
): Promise<StoredCustomer | undefined> {
  const row = await db.selectFrom('customers').selectAll().where('referral_code', '=', code).executeTakeFirst();
  return row && toStoredCustomer(row);
}

/** The account's customers with these ids (in no order; ids of another account are left out). */
export async function findCustomersByIds(
  db: Kysely<Database>,
  accountId: number,
  ids: readonly number[],
): Promise<StoredCustomer[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('customers')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return rows.map(toStoredCustomer);
}

/** The account's customer with this normalised email, as stored. */
export async function findStoredCustomerByEmail(
  db: Kysely<Database>,
  accountId: number,
  emailNormalized: string,
): Promise<StoredCustomer | undefined> {
  const row = await db
    .selectFrom('customers')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('email_normalized', '=', emailNormalized)
    .executeTakeFirst();
  return row && toStoredCustomer(row);
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
): Promise<StoredCustomer | undefined> {
  const row = await db
    .selectFrom('customers')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row && toStoredCustomer(row);
}

/** A customer by id alone (the CLI names customers by id). */
export async function findCustomerById(db: Kysely<Database>, id: number): Promise<StoredCustomer | undefined> {
  const row = await db.selectFrom('customers').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toStoredCustomer(row);
}

/**
 * The account's customer, locked until the transaction ends (call inside one): on PostgreSQL
 * `FOR UPDATE`, which also returns the latest committed row; on SQLite every transaction
 * already holds the database's write lock (BEGIN IMMEDIATE, see storage/db.ts).
 */
export async function lockCustomer(
  trx: Transaction<Database>,
  accountId: number,
  id: number,
): Promise<StoredCustomer | undefined> {
  const [row] = await lockCustomerQuery(trx, { accountId, id });
  return row && toStoredCustomer(row);
}

const lockCustomerQuery = compiledQuery((db, v: { accountId: number; id: number }) =>
  db
    .selectFrom('customers')
    .selectAll()
    .where('id', '=', v.id)
    .where('account_id', '=', v.accountId)
    .$if(isPostgres(db), (query) => query.forUpdate()),
);

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
): Promise<StoredCustomer[]> {
  const plan = await sincePlan(db, 'customers', accountId, filters, { direction, boundary, rows });
  const order = direction === 'next' ? 'desc' : 'asc';
  const matching = <O>(q: SelectQueryBuilder<Database, 'customers', O>) =>
    q
      .where('account_id', '=', accountId)
      .$if(filters.emailNormalized !== undefined, (q) => q.where('email_normalized', '=', filters.emailNormalized!))
      .$if(filters.state !== undefined, (q) => q.where('state', '=', filters.state!))
      .$if(filters.updatedAtMin !== undefined, (q) =>
        q.where(sinceCondition('customers', plan, 'updated_at', filters.updatedAtMin!)),
      )
      .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!));
  const found = await (plan === 'range'
    ? db
        .selectFrom('customers')
        .selectAll()
        .where(
          'id',
          'in',
          matching(db.selectFrom('customers').select('id')).orderBy(unindexed('id'), order).limit(rows),
        )
    : matching(db.selectFrom('customers').selectAll()).limit(rows)
  )
    .orderBy('id', order)
    .execute();
  return found.map(toStoredCustomer);
}

/** The console's search: part of an email or name, a state, a VIP tier (`null`: none). */
export interface CustomerSearch {
  /** Lower-cased text found anywhere in the email, first name, last name or "first last". */
  text?: string;
  state?: CustomerState;
  tierId?: number | null;
}

/** `text` as a LIKE pattern that matches it anywhere, its wildcards (and the escape) taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Up to `rows` of the account's customers matching the console's search, beyond `boundary`
 * (see keysetPage). The text is compared lower-cased on both engines (`lower(column) LIKE
 * lower-case pattern`, the same result on SQLite and PostgreSQL, where LIKE alone is
 * case-sensitive). A substring cannot use an index: this scans the account's customers in id
 * order, newest first, and stops at a page; the term's length is bounded by the caller.
 */
export async function searchCustomersPage(
  db: Kysely<Database>,
  accountId: number,
  search: CustomerSearch,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<StoredCustomer[]> {
  const pattern = search.text === undefined ? null : containsPattern(search.text);
  const found = await db
    .selectFrom('customers')
    .selectAll()
    .where('account_id', '=', accountId)
    .$if(pattern !== null, (q) =>
      q.where(
        sql<boolean>`(email_normalized like ${pattern} escape '\\'
          or lower(coalesce(first_name, '')) like ${pattern} escape '\\'
          or lower(coalesce(last_name, '')) like ${pattern} escape '\\'
          or lower(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) like ${pattern} escape '\\')`,
      ),
    )
    .$if(search.state !== undefined, (q) => q.where('state', '=', search.state!))
    .$if(search.tierId !== undefined, (q) =>
      search.tierId === null ? q.where('vip_tier_id', 'is', null) : q.where('vip_tier_id', '=', search.tierId!),
    )
    .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
  return found.map(toStoredCustomer);
}

/**
 * Sets a customer's state when it is another; the customer, or undefined when there is no
 * customer with this id or it already has this state (nothing written then). A customer who
 * becomes a member for the first time gets `referralCode` as their referral code.
 */
export async function updateCustomerState(
  trx: Transaction<Database>,
  id: number,
  state: CustomerState,
  now: number,
  referralCode: string,
): Promise<StoredCustomer | undefined> {
  const row = await trx
    .updateTable('customers')
    .set({
      state,
      updated_at: now,
      ...(state === 'member' ? { referral_code: sql<string>`coalesce(referral_code, ${referralCode})` } : {}),
    })
    .where('id', '=', id)
    .where('state', '<>', state)
    .returningAll()
    .executeTakeFirst();
  return row && toStoredCustomer(row);
}

/** The fields an import may change on a customer (absent: left as they are). */
export interface ImportedFields {
  first_name?: string;
  last_name?: string;
  date_of_birth?: string;
  state?: CustomerState;
}

/**
 * Sets the fields given on a customer; the customer after. A customer who becomes a member for the
 * first time gets `referralCode` as their referral code.
 */
export async function updateImportedFields(
  trx: Transaction<Database>,
  id: number,
  fields: ImportedFields,
  now: number,
  referralCode: string,
): Promise<StoredCustomer> {
  const row = await trx
    .updateTable('customers')
    .set({
      ...fields,
      updated_at: now,
      ...(fields.state === 'member' ? { referral_code: sql<string>`coalesce(referral_code, ${referralCode})` } : {}),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toStoredCustomer(row);
}

/** Adds points earned elsewhere beyond imported balances (points_earned includes them), one statement. */
export async function addEarnedBeforeImport(
  trx: Transaction<Database>,
  earnings: readonly { customerId: number; points: number }[],
  now: number,
) {
  if (earnings.length === 0) return;
  // Each customer's own points: CASE id WHEN … THEN … END, bound values only (typed: PostgreSQL reads a bare one as text).
  const points = sql<number>`case id ${sql.join(
    earnings.map(({ customerId, points }) => sql`when ${customerId} then cast(${points} as bigint)`),
    sql` `,
  )} end`;
  await trx
    .updateTable('customers')
    .set((eb) => ({
      earned_before_import: eb('earned_before_import', '+', points),
      points_earned: eb('points_earned', '+', points),
      updated_at: now,
    }))
    .where(
      'id',
      'in',
      earnings.map((earning) => earning.customerId),
    )
    .execute();
}

/** A new customer of an import, with the fields its row gives. */
export type ImportedCustomer = NewCustomer & { date_of_birth: string | null; state: CustomerState };

/** Inserts the customers whose email the account does not have (one statement); those inserted. */
export async function insertCustomersIfAbsent(
  trx: Transaction<Database>,
  customers: readonly ImportedCustomer[],
): Promise<StoredCustomer[]> {
  if (customers.length === 0) return [];
  const rows = await trx
    .insertInto('customers')
    // Every row names every column: SQLite has no DEFAULT inside a multi-row VALUES.
    .values(customers.map((customer) => ({ ...customer })))
    .onConflict((oc) => oc.columns(['account_id', 'email_normalized']).doNothing())
    .returningAll()
    .execute();
  return rows.map(toStoredCustomer);
}

/** The account's customers with these normalised emails, locked until the transaction ends (on PostgreSQL). */
export async function lockCustomersByEmail(
  trx: Transaction<Database>,
  accountId: number,
  emailsNormalized: readonly string[],
): Promise<StoredCustomer[]> {
  if (emailsNormalized.length === 0) return [];
  const rows = await trx
    .selectFrom('customers')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('email_normalized', 'in', emailsNormalized)
    .orderBy('id')
    .$if(isPostgres(trx), (query) => query.forUpdate())
    .execute();
  return rows.map(toStoredCustomer);
}

function toStoredCustomer(row: CustomerRow): StoredCustomer {
  return {
    id: row.id,
    accountId: row.account_id,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    state: row.state,
    dateOfBirth: row.date_of_birth,
    pointsBalance: row.points_balance,
    pointsEarned: row.points_earned,
    referralCode: row.referral_code,
    ...toStoredPlacement(row),
    lastActiveAt: row.last_active_at === null ? null : Number(row.last_active_at),
    expiryRemindedFor: row.expiry_reminded_for === null ? null : Number(row.expiry_reminded_for),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toSummary(row: CustomerRow): CustomerSummary {
  return { id: row.id, email: row.email, first_name: row.first_name, last_name: row.last_name };
}
