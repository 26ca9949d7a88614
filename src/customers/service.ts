import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import { normalizeEmail, trimEmail } from '../email.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import type { EventsService } from '../events/service.js';
import { Cursors, keysetPage, type PageMetadata } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import { newReferralCode, referralUrl } from '../referrals/code.js';
import type { CustomerState, Database, VipProgramType } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { DAY_MS, parseTime } from '../time.js';
import { validate } from '../validate.js';
import { nextTier } from '../vip-tiers/periods.js';
import type { VipTier } from '../vip-tiers/schemas.js';
import type { VipProgram, VipTiersService } from '../vip-tiers/service.js';
import {
  addEarnedBeforeImport,
  type CustomerFilters,
  type CustomerSearch,
  findCustomer,
  findCustomerByEmail,
  findCustomerById,
  findCustomerByReferralCode,
  findCustomersByIds,
  findCustomersPage,
  findStoredCustomerByEmail,
  type ImportedFields,
  insertCustomerIfAbsent,
  insertCustomersIfAbsent,
  listCustomers,
  lockCustomer,
  lockCustomersByEmail,
  type StoredCustomer,
  searchCustomersPage,
  updateCustomerState,
  updateImportedFields,
} from './repository.js';

export type { CustomerSearch } from './repository.js';

import {
  CUSTOMER_STATES,
  type Customer,
  CustomerInput,
  type CustomerSummary,
  type CustomersPage,
  type CustomersQuery,
  type VipStatus,
} from './schemas.js';

const CUSTOMERS_CURSOR = { resource: 'customers', filtered: true };

/** A customer in an export: the import's columns first, so that it imports into another account as it is. */
export interface ExportedCustomer {
  email: string;
  first_name: string | null;
  last_name: string | null;
  date_of_birth: string | null;
  state: string;
  points_balance: number;
  points_earned: number;
  id: number;
  vip_tier_id: number | null;
  referral_url: string | null;
  created_at: string;
}

/** A customer's fields as an identity or the CLI gives them (the email already trimmed). */
export interface CustomerFields {
  email: string;
  first_name?: string | null;
  last_name?: string | null;
}

/** The console's customer search has cursors of its own kind, bound to its filters (the API's list takes other ones). */
const CUSTOMER_SEARCH_CURSOR = { resource: 'customers_console_search', filtered: true };

/** One page of the console's customer search, with the account's tiers (to name each customer's). */
export interface CustomerSearchPage {
  customers: Customer[];
  metadata: PageMetadata;
  tiers: VipTier[];
}

/** Thrown when a customer another transaction created cannot be seen yet: replay the transaction. */
export class CustomerNotVisible extends Error {}

/**
 * A customer locked for the rest of a unit of work: what the ledger and its callers decide on,
 * and all of the row, so that the events of the change show the customer after it without
 * reading it again.
 */
export type LockedCustomer = StoredCustomer;

/** An account's customers: one per normalised email. */
export class CustomersService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    clock: Clock,
    private readonly accounts: AccountsService,
    private readonly vipTiers: VipTiersService,
    private readonly events: EventsService,
    /** Where referral URLs point: REFERRAL_BASE_URL, else the server's address and `/r`. */
    private readonly referralBase: string,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /** One page of the account's customers matching the query's filters, id descending. */
  async page(accountId: number, query: CustomersQuery): Promise<CustomersPage> {
    const filters = this.filters(query);
    const [page, program] = await Promise.all([
      keysetPage({
        codec: await this.cursors.codec(CUSTOMERS_CURSOR),
        accountId,
        limit: query.limit ?? DEFAULT_LIMIT,
        cursor: query.cursor,
        filters,
        fetch: (direction, boundary, rows) => findCustomersPage(this.db, accountId, filters, direction, boundary, rows),
      }),
      this.program(accountId),
    ]);
    return { customers: page.items.map((row) => toCustomer(row, program, this.referralBase)), metadata: page.metadata };
  }

  /**
   * Customers for an export, read through `db` (a snapshot): up to `limit` matching the API's list
   * filters with ids below `before` (null: from the newest), as the import's columns name them, then
   * the rest; and the boundary of the next page (undefined: none left).
   */
  async exportPage(
    db: Kysely<Database>,
    accountId: number,
    query: Pick<CustomersQuery, 'email' | 'state' | 'updated_at_min'>,
    before: number | null,
    limit: number,
  ): Promise<{ rows: ExportedCustomer[]; next: number | undefined }> {
    const found = await findCustomersPage(db, accountId, this.filters(query), 'next', before, limit);
    return {
      rows: found.map((c) => ({
        email: c.email,
        first_name: c.firstName,
        last_name: c.lastName,
        date_of_birth: c.dateOfBirth,
        state: c.state,
        points_balance: c.pointsBalance,
        points_earned: c.pointsEarned,
        id: c.id,
        vip_tier_id: c.vipTierId,
        referral_url: referralUrl(this.referralBase, c.referralCode),
        created_at: isoTime(c.createdAt),
      })),
      next: found.length === limit ? found[found.length - 1]!.id : undefined,
    };
  }

  /** The API's list filters, as the repository takes them. */
  private filters(query: Pick<CustomersQuery, 'email' | 'state' | 'updated_at_min'>): CustomerFilters {
    return {
      ...(query.email === undefined ? {} : { emailNormalized: normalizeEmail(query.email) }),
      ...(query.state === undefined ? {} : { state: query.state }),
      ...(query.updated_at_min === undefined
        ? {}
        : { updatedAtMin: parseTime(query.updated_at_min, 'updated_at_min') }),
    };
  }

  /**
   * One page of the account's customers matching the console's search (id descending, keyset
   * cursors bound to the search): part of an email or name, a state, a tier. The API's list
   * keeps its own contract (an exact email).
   */
  async search(accountId: number, search: CustomerSearch, cursor?: string): Promise<CustomerSearchPage> {
    // One JSON form per search for the cursor's digest: keys in a fixed order, absent ones left out.
    const filters = {
      ...(search.text === undefined ? {} : { text: search.text }),
      ...(search.state === undefined ? {} : { state: search.state }),
      ...(search.tierId === undefined ? {} : { tierId: search.tierId }),
    };
    const [page, program] = await Promise.all([
      keysetPage({
        codec: await this.cursors.codec(CUSTOMER_SEARCH_CURSOR),
        accountId,
        limit: DEFAULT_LIMIT,
        cursor,
        filters,
        fetch: (direction, boundary, rows) =>
          searchCustomersPage(this.db, accountId, filters, direction, boundary, rows),
      }),
      this.program(accountId),
    ]);
    return {
      customers: page.items.map((row) => toCustomer(row, program, this.referralBase)),
      metadata: page.metadata,
      tiers: [...program.tiers],
    };
  }

  /** The account's customer; `404 not_found` for an id the account does not have. */
  async get(accountId: number, id: number): Promise<Customer> {
    const customer = await findCustomer(this.db, accountId, id);
    if (!customer) throw notFound(`customer ${id} does not exist`);
    return toCustomer(customer, await this.program(accountId), this.referralBase);
  }

  /**
   * Changes a customer's state (only members earn and spend), with `customer.updated`; `404` for
   * an unknown id. The state it already has changes nothing (no write, no event).
   */
  async setState(id: number, state: string): Promise<Customer> {
    if (!(CUSTOMER_STATES as readonly string[]).includes(state)) {
      throw invalidParameter('state', `must be one of ${CUSTOMER_STATES.join(', ')}`);
    }
    return this.uow.run(async (w) => {
      const changed = await updateCustomerState(w.trx, id, state as CustomerState, w.now, newReferralCode());
      const customer = changed ?? (await findCustomerById(w.trx, id));
      if (!customer) throw notFound(`customer ${id} does not exist`);
      const shown = toCustomer(customer, await this.programIn(w, customer.accountId), this.referralBase);
      if (changed) this.events.record(w, customer.accountId, 'customer.updated', { customer: shown });
      return shown;
    });
  }

  /** A customer by id alone, as the API shows it (for the CLI); `404` for an unknown id. */
  async show(id: number): Promise<Customer> {
    const customer = await findCustomerById(this.db, id);
    if (!customer) throw notFound(`customer ${id} does not exist`);
    return toCustomer(customer, await this.program(customer.accountId), this.referralBase);
  }

  /** The customer holding this referral code, in any account (read in `w` when given); undefined for an unknown code. */
  byReferralCode(code: string, w?: Work): Promise<StoredCustomer | undefined> {
    return findCustomerByReferralCode(w?.trx ?? this.db, code);
  }

  /**
   * The account's customers with these ids as the API shows them, by id: read in `w` when given
   * (to see its own changes, without a second connection of the pool), else from the pool.
   */
  async shownByIds(accountId: number, ids: readonly number[], w?: Work): Promise<Map<number, Customer>> {
    const rows = await findCustomersByIds(w?.trx ?? this.db, accountId, ids);
    const program = w ? await this.programIn(w, accountId) : await this.program(accountId);
    return new Map(rows.map((row) => [row.id, toCustomer(row, program, this.referralBase)]));
  }

  /** The account's customer with this email (matched as everywhere), as the work's transaction sees it. */
  findByEmail(w: Work, accountId: number, email: string): Promise<StoredCustomer | undefined> {
    return findStoredCustomerByEmail(w.trx, accountId, normalizeEmail(email));
  }

  /** A customer's referral URL, from their code (null without one). */
  referralUrlOf(code: string | null): string | null {
    return referralUrl(this.referralBase, code);
  }

  /** Creates a customer (the CLI's `customers create`); an email already in the account is refused. */
  async create(accountId: number, input: unknown): Promise<CustomerSummary> {
    const customer = validate(CustomerInput, trimEmail(input), 'customer');
    await this.accounts.require(accountId);
    const created = await this.uow.run((w) => this.insertPlaced(w, accountId, customer));
    if (created)
      return { id: created.id, email: created.email, first_name: created.firstName, last_name: created.lastName };
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
   * inside the caller's unit of work. Throws CustomerNotVisible when a concurrent transaction holds
   * the email but its customer cannot be read yet.
   */
  async idForEmail(w: Work, accountId: number, fields: CustomerFields): Promise<number> {
    const inserted = await this.insertPlaced(w, accountId, fields);
    if (inserted) return inserted.id;
    // The insert did nothing, so the customer exists; READ COMMITTED lets this statement see it
    // even when a concurrent transaction committed it after ours began.
    const existing = await findCustomerByEmail(w.trx, accountId, normalizeEmail(fields.email));
    if (!existing) throw new CustomerNotVisible();
    return existing.id;
  }

  /**
   * The account's customer, locked until the work's transaction ends (on PostgreSQL `FOR UPDATE`,
   * which also reads the latest committed row); undefined for an id the account does not have.
   */
  lock(w: Work, accountId: number, customerId: number): Promise<LockedCustomer | undefined> {
    return lockCustomer(w.trx, accountId, customerId);
  }

  /**
   * The customer as the API shows it, from a row the work already holds (the account's tiers
   * read once per work): what the work's events carry.
   */
  async shownIn(w: Work, customer: StoredCustomer): Promise<Customer> {
    return toCustomer(customer, await this.programIn(w, customer.accountId), this.referralBase);
  }

  /**
   * An import's customers, in the caller's unit of work, for rows with distinct emails: those the
   * account has, locked, and the others created (members unless their row says otherwise; not yet
   * placed, and with no event: the import records it once the row's work is done). Answers each
   * row's customer in order, and which were created.
   */
  async importMany(
    w: Work,
    accountId: number,
    rows: readonly ({ email: string } & ImportedFields)[],
  ): Promise<{ customers: StoredCustomer[]; created: Set<number> }> {
    const emails = rows.map((row) => normalizeEmail(row.email));
    const held = new Map<string, StoredCustomer>();
    const hold = (customers: readonly StoredCustomer[]) => {
      for (const customer of customers) held.set(normalizeEmail(customer.email), customer);
    };
    hold(await lockCustomersByEmail(w.trx, accountId, emails));
    const missing = rows.filter((_, i) => !held.has(emails[i]!));
    const inserted = await insertCustomersIfAbsent(
      w.trx,
      missing.map((row) => ({
        ...this.row(accountId, row, w.now),
        date_of_birth: row.date_of_birth ?? null,
        state: row.state ?? 'member',
      })),
    );
    hold(inserted);
    if (inserted.length < missing.length) {
      // Created meanwhile by another transaction, which READ COMMITTED lets this statement see.
      hold(
        await lockCustomersByEmail(
          w.trx,
          accountId,
          emails.filter((email) => !held.has(email)),
        ),
      );
    }
    const customers = emails.map((email) => {
      const customer = held.get(email);
      if (!customer) throw new CustomerNotVisible();
      return customer;
    });
    return { customers, created: new Set(inserted.map((customer) => customer.id)) };
  }

  /**
   * Gives a customer the fields of an imported row that differ from theirs (a customer who becomes
   * a member gets a referral code); the customer after, and whether anything changed.
   */
  async importFields(w: Work, customer: StoredCustomer, row: ImportedFields): Promise<StoredCustomer | undefined> {
    const current: ImportedFields = {
      first_name: customer.firstName ?? undefined,
      last_name: customer.lastName ?? undefined,
      date_of_birth: customer.dateOfBirth ?? undefined,
      state: customer.state,
    };
    const changes = Object.fromEntries(
      (['first_name', 'last_name', 'date_of_birth', 'state'] as const)
        .filter((field) => row[field] !== undefined && row[field] !== current[field])
        .map((field) => [field, row[field]]),
    ) as ImportedFields;
    if (Object.keys(changes).length === 0) return undefined;
    return updateImportedFields(w.trx, customer.id, changes, w.now, newReferralCode());
  }

  /** Adds points earned elsewhere beyond imported balances to customers the caller locked. */
  addEarnedBeforeImport(w: Work, earnings: readonly { customerId: number; points: number }[]): Promise<void> {
    return addEarnedBeforeImport(w.trx, earnings, w.now);
  }

  /** The account's customers with these ids as the work's transaction now holds them, by id. */
  async heldIn(w: Work, accountId: number, ids: readonly number[]): Promise<Map<number, StoredCustomer>> {
    const customers = await findCustomersByIds(w.trx, accountId, ids);
    return new Map(customers.map((customer) => [customer.id, customer]));
  }

  /**
   * Records a customer's `customer.created` (a new one, of `insertPlaced` or an import) or
   * `customer.updated` (an imported change), showing them as the work left them.
   */
  async announce(w: Work, customer: StoredCustomer, created: boolean): Promise<void> {
    const type = created ? 'customer.created' : 'customer.updated';
    this.events.record(w, customer.accountId, type, { customer: await this.shownIn(w, customer) });
  }

  /** What showing the account's customers needs: its VIP program and its points expiry (one read). */
  private async program(accountId: number): Promise<ShownProgram> {
    return shownProgram(await this.vipTiers.program(accountId));
  }

  /** The same, read once per unit of work in its transaction (the read that places its customers). */
  private async programIn(w: Work, accountId: number): Promise<ShownProgram> {
    return shownProgram(await this.vipTiers.programIn(w, accountId));
  }

  /**
   * Inserts a new customer, placed in the VIP tier 0 points give (a tier at milestone 0), unless
   * the email is taken; records `customer.created` (the customer placed), then the placement's
   * `customer.vip_tier_changed` when it put them in a tier.
   */
  private async insertPlaced(w: Work, accountId: number, fields: CustomerFields): Promise<StoredCustomer | undefined> {
    const inserted = await insertCustomerIfAbsent(w.trx, this.row(accountId, fields, w.now));
    if (!inserted) return undefined;
    const { fields: placement, move } = await this.vipTiers.place(w, inserted);
    // The placement sets updated_at to the work's time too, which the insert already wrote.
    const created = { ...inserted, ...placement };
    await this.announce(w, created, true);
    if (move) this.vipTiers.announce(w, accountId, move);
    return created;
  }

  private row(accountId: number, fields: CustomerFields, now: number) {
    return {
      account_id: accountId,
      email: fields.email,
      email_normalized: normalizeEmail(fields.email),
      first_name: fields.first_name ?? null,
      last_name: fields.last_name ?? null,
      // Every new customer is a member: their referral code is made with them.
      referral_code: newReferralCode(),
      created_at: now,
      updated_at: now,
    };
  }
}

/** What a customer is shown with besides their row: the account's tiers and its points expiry. */
export interface ShownProgram {
  vipProgram: VipProgramType;
  tiers: readonly VipTier[];
  /** Days of inactivity before a balance expires; null: never. */
  expiryDays: number | null;
}

function shownProgram(program: VipProgram): ShownProgram {
  return { vipProgram: program.type, tiers: program.tiers, expiryDays: program.pointsExpiryDays };
}

/**
 * When the customer's balance expires, `lifetimeMs` after their last points transaction or activity
 * (null: the account's balances never expire): only a member's balance of points expires, so null
 * for anyone else, or without points.
 */
export function balanceExpiresAt(customer: StoredCustomer, lifetimeMs: number | null): number | null {
  if (lifetimeMs === null || customer.state !== 'member' || customer.pointsBalance <= 0) return null;
  return customer.lastActiveAt === null ? null : customer.lastActiveAt + lifetimeMs;
}

/**
 * The API form of a customer: `tiers` are the account's, ascending milestone; `referralBase` is
 * where referral URLs point.
 */
export function toCustomer(customer: StoredCustomer, program: ShownProgram, referralBase: string): Customer {
  const vipStatus =
    program.vipProgram === 'all_time' ? allTimeStatus(customer, program) : periodStatus(customer, program);
  const expiresAt = balanceExpiresAt(customer, program.expiryDays === null ? null : program.expiryDays * DAY_MS);
  return {
    id: customer.id,
    first_name: customer.firstName,
    last_name: customer.lastName,
    email: customer.email,
    state: customer.state,
    date_of_birth: customer.dateOfBirth,
    points_balance: customer.pointsBalance,
    points_expire_at: expiresAt === null ? null : isoTime(expiresAt),
    referral_url: referralUrl(referralBase, customer.referralCode),
    vip_tier_id: customer.vipTierId,
    vip_status: vipStatus,
    created_at: isoTime(customer.createdAt),
    updated_at: isoTime(customer.updatedAt),
  };
}

/** An all-time program's status: progress is every point earned, tiers never expire. */
function allTimeStatus(customer: StoredCustomer, program: ShownProgram): VipStatus {
  return {
    vip_tier_id: customer.vipTierId,
    vip_tier_expires_at: null,
    progress_value: customer.pointsEarned,
    current_vip_period_end: null,
    delta_to_retain_vip_tier: null,
    ...next(customer.vipTierId, customer.pointsEarned, program),
  };
}

/** A period program's status, as its placement stored it (see vip-tiers/periods.ts). */
function periodStatus(customer: StoredCustomer, program: ShownProgram): VipStatus {
  const time = (ms: number | null) => (ms === null ? null : isoTime(ms));
  return {
    vip_tier_id: customer.vipTierId,
    vip_tier_expires_at: time(customer.vipTierExpiresAt),
    progress_value: customer.vipProgress,
    current_vip_period_end: time(customer.vipPeriodEnd),
    delta_to_retain_vip_tier: customer.vipRetainDelta,
    ...next(customer.vipTierId, customer.vipProgress, program),
  };
}

function next(tierId: number | null, progress: number, program: ShownProgram) {
  const tier = nextTier(program.tiers, tierId, progress);
  return { next_vip_tier_id: tier?.id ?? null, delta_to_next_vip_tier: tier ? tier.milestone - progress : null };
}
