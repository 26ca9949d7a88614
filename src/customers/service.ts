import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { normalizeEmail, trimEmail } from '../email.js';
import { DomainError } from '../errors.js';
import type { Database } from '../storage/schema.js';
import { validate } from '../validate.js';
import { findCustomerByEmail, insertCustomerIfAbsent, listCustomers } from './repository.js';
import { type Customer, CustomerInput } from './schemas.js';

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
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
  ) {}

  /** Creates a customer (the CLI's `customers create`); an email already in the account is refused. */
  async create(accountId: number, input: unknown): Promise<Customer> {
    const customer = validate(CustomerInput, trimEmail(input), 'customer');
    await this.accounts.require(accountId);
    const created = await insertCustomerIfAbsent(this.db, this.row(accountId, customer, this.clock.now()));
    if (created) return created;
    const existing = await findCustomerByEmail(this.db, accountId, normalizeEmail(customer.email));
    throw new DomainError('invalid_parameter', `a customer with this email already exists (id ${existing?.id})`, [
      { field: 'customer.email', message: `is already the email of customer ${existing?.id}` },
    ]);
  }

  /** The account's customers, oldest first. */
  async list(accountId: number): Promise<Customer[]> {
    await this.accounts.require(accountId);
    return listCustomers(this.db, accountId);
  }

  /**
   * The id of the account's customer with this email, created from `fields` when there is none,
   * inside the caller's transaction. Throws CustomerNotVisible when a concurrent transaction holds
   * the email but its customer cannot be read yet.
   */
  async idForEmail(trx: Kysely<Database>, accountId: number, fields: CustomerFields, now: number): Promise<number> {
    const inserted = await insertCustomerIfAbsent(trx, this.row(accountId, fields, now));
    if (inserted) return inserted.id;
    // The insert did nothing, so the customer exists; READ COMMITTED lets this statement see it
    // even when a concurrent transaction committed it after ours began.
    const existing = await findCustomerByEmail(trx, accountId, normalizeEmail(fields.email));
    if (!existing) throw new CustomerNotVisible();
    return existing.id;
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
