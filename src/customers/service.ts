import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import { normalizeEmail, trimEmail } from '../email.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { CustomerRow, CustomerState, Database } from '../storage/schema.js';
import { validate } from '../validate.js';
import { listTiers } from '../vip-tiers/repository.js';
import type { VipTier } from '../vip-tiers/schemas.js';
import {
  type CustomerFilters,
  findCustomer,
  findCustomerByEmail,
  findCustomerById,
  findCustomersPage,
  insertCustomerIfAbsent,
  listCustomers,
  updateCustomerState,
} from './repository.js';
import {
  CUSTOMER_STATES,
  type Customer,
  CustomerInput,
  type CustomerSummary,
  type CustomersPage,
  type CustomersQuery,
} from './schemas.js';

const CUSTOMERS_CURSOR = { resource: 'customers', filtered: true };

/** A customer's fields as an identity or the CLI gives them (the email already trimmed). */
export interface CustomerFields {
  email: string;
  first_name?: string | null;
  last_name?: string | null;
}

/** Thrown when a customer another transaction created cannot be seen yet: replay the transaction. */
export class CustomerNotVisible extends Error {}

/** An account's customers: one per normalised email. */
export class CustomersService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /** One page of the account's customers matching the query's filters, id descending. */
  async page(accountId: number, query: CustomersQuery): Promise<CustomersPage> {
    const filters: CustomerFilters = {
      ...(query.email === undefined ? {} : { emailNormalized: normalizeEmail(query.email) }),
      ...(query.state === undefined ? {} : { state: query.state }),
      ...(query.updated_at_min === undefined
        ? {}
        : { updatedAtMin: parseTime(query.updated_at_min, 'updated_at_min') }),
    };
    const [page, tiers] = await Promise.all([
      keysetPage({
        codec: await this.cursors.codec(CUSTOMERS_CURSOR),
        accountId,
        limit: query.limit ?? DEFAULT_LIMIT,
        cursor: query.cursor,
        filters,
        fetch: (direction, boundary, rows) => findCustomersPage(this.db, accountId, filters, direction, boundary, rows),
      }),
      listTiers(this.db, accountId),
    ]);
    return { customers: page.items.map((row) => toCustomer(row, tiers)), metadata: page.metadata };
  }

  /** The account's customer; `404 not_found` for an id the account does not have. */
  async get(accountId: number, id: number): Promise<Customer> {
    const row = await findCustomer(this.db, accountId, id);
    if (!row) throw notFound(`customer ${id} does not exist`);
    return toCustomer(row, await listTiers(this.db, accountId));
  }

  /** Changes a customer's state (only members earn and spend); `404` for an unknown id. */
  async setState(id: number, state: string): Promise<Customer> {
    if (!(CUSTOMER_STATES as readonly string[]).includes(state)) {
      throw invalidParameter('state', `must be one of ${CUSTOMER_STATES.join(', ')}`);
    }
    const row = await updateCustomerState(this.db, id, state as CustomerState, this.clock.now());
    if (!row) throw notFound(`customer ${id} does not exist`);
    return toCustomer(row, await listTiers(this.db, row.account_id));
  }

  /** A customer by id alone, as the API shows it (for the CLI); `404` for an unknown id. */
  async show(id: number): Promise<Customer> {
    const row = await findCustomerById(this.db, id);
    if (!row) throw notFound(`customer ${id} does not exist`);
    return toCustomer(row, await listTiers(this.db, row.account_id));
  }

  /** Creates a customer (the CLI's `customers create`); an email already in the account is refused. */
  async create(accountId: number, input: unknown): Promise<CustomerSummary> {
    const customer = validate(CustomerInput, trimEmail(input), 'customer');
    await this.accounts.require(accountId);
    const created = await this.insertPlaced(this.db, accountId, customer, this.clock.now());
    if (created) return created;
    const existing = await findCustomerByEmail(this.db, accountId, normalizeEmail(customer.email));
    throw new DomainError('invalid_parameter', `a customer with this email already exists (id ${existing?.id})`, [
      { field: 'customer.email', message: `is already the email of customer ${existing?.id}` },
    ]);
  }

  /** The account's customers, oldest first. */
  async list(accountId: number): Promise<CustomerSummary[]> {
    await this.accounts.require(accountId);
    return listCustomers(this.db, accountId);
  }

  /**
   * The id of the account's customer with this email, created from `fields` when there is none,
   * inside the caller's transaction. Throws CustomerNotVisible when a concurrent transaction holds
   * the email but its customer cannot be read yet.
   */
  async idForEmail(trx: Kysely<Database>, accountId: number, fields: CustomerFields, now: number): Promise<number> {
    const inserted = await this.insertPlaced(trx, accountId, fields, now);
    if (inserted) return inserted.id;
    // The insert did nothing, so the customer exists; READ COMMITTED lets this statement see it
    // even when a concurrent transaction committed it after ours began.
    const existing = await findCustomerByEmail(trx, accountId, normalizeEmail(fields.email));
    if (!existing) throw new CustomerNotVisible();
    return existing.id;
  }

  /** Inserts a new customer in the VIP tier 0 points give (a tier at milestone 0), unless the email is taken. */
  private insertPlaced(trx: Kysely<Database>, accountId: number, fields: CustomerFields, now: number) {
    return insertCustomerIfAbsent(trx, this.row(accountId, fields, now));
  }

  private row(accountId: number, fields: CustomerFields, now: number) {
    return {
      account_id: accountId,
      email: fields.email,
      email_normalized: normalizeEmail(fields.email),
      first_name: fields.first_name ?? null,
      last_name: fields.last_name ?? null,
      created_at: now,
      updated_at: now,
    };
  }
}

/** An ISO 8601 date-time (checked by the schema) as epoch ms; `400` naming `field` if it names no instant. */
export function parseTime(value: string, field: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw invalidParameter(field, 'must be an ISO 8601 date-time that names an instant');
  return ms;
}

/** The API form of a customer: `tiers` are the account's, ascending milestone. */
export function toCustomer(row: CustomerRow, tiers: readonly VipTier[]): Customer {
  const next = tiers.find((tier) => tier.milestone > row.points_earned);
  return {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    state: row.state,
    date_of_birth: row.date_of_birth,
    points_balance: row.points_balance,
    referral_url: row.referral_url,
    vip_tier_id: row.vip_tier_id,
    vip_status: {
      vip_tier_id: row.vip_tier_id,
      vip_tier_expires_at: null,
      progress_value: row.points_earned,
      current_vip_period_end: null,
      delta_to_retain_vip_tier: null,
      next_vip_tier_id: next?.id ?? null,
      delta_to_next_vip_tier: next ? next.milestone - row.points_earned : null,
    },
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
  };
}
