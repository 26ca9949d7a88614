import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { CustomersService, LockedCustomer } from '../customers/service.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import type { EventsService } from '../events/service.js';
import { fingerprint, type IdempotencyService, type IdempotentRequest } from '../idempotency/service.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { Database } from '../storage/schema.js';
import type { Work } from '../storage/unit-of-work.js';
import { parseTime } from '../time.js';
import type { VipTiersService } from '../vip-tiers/service.js';
import {
  type CreditTimesAround,
  countCredits,
  countCreditsIn,
  findActivityTransactions,
  findCreditTimesAround,
  findPointsTransaction,
  findPointsTransactionsPage,
  insertPointsTransaction,
  insertPointsTransactions,
  type PointsTransactionFilters,
} from './repository.js';

export type { CreditTimesAround } from './repository.js';

import type {
  PointsTransaction,
  PointsTransactionInput,
  PointsTransactionsPage,
  PointsTransactionsQuery,
} from './schemas.js';

/** The largest balance (and points earned) a customer may hold: JSON keeps integers exactly up to here. */
export const MAX_BALANCE = Number.MAX_SAFE_INTEGER;

const POINTS_TRANSACTIONS_CURSOR = { resource: 'points_transactions', filtered: true };

/** One entry for the ledger. */
export interface LedgerEntry {
  pointsChange: number;
  description: string;
  internalNote: string | null;
  /** The activity and rule of a credit (what earning limits count), the time it counts at. */
  activityId?: number;
  /** The purchase a debit paid for, or a refund gives back. */
  pointsPurchaseId?: number;
  earningRuleId?: number;
  occurredAt?: number;
  /** The console user who made a manual adjustment (kept for the console; never in the API's answer). */
  createdByUserId?: number;
  /** False for a credit that gives back what was spent (a cancelled reward's refund): not earned, no VIP progress. */
  countsAsEarned?: boolean;
}

/** What posting an entry did: the transaction written and the customer after it (their new balance, points earned and tier). */
export interface Posted {
  transaction: PointsTransaction;
  customer: LockedCustomer;
}

/**
 * The key of a manual change (`POST /v1/points_transactions`, or the console's adjustment): the
 * same body under the same key is the same request, whichever front door sent it.
 */
export function manualChangeRequest(
  accountId: number,
  input: PointsTransactionInput,
  key: string | undefined,
): IdempotentRequest {
  return { accountId, key, fingerprint: fingerprint('POST /v1/points_transactions', input) };
}

/**
 * The points ledger: every change to a balance is a points transaction, posted in the
 * transaction that locked its customer. The database keeps the balance equal to the sum of the
 * ledger (a trigger) and never below 0 (a constraint); this refuses an overdraft before writing,
 * so the caller gets `422 insufficient_points` and nothing is written.
 */
export class PointsTransactionsService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    clock: Clock,
    private readonly idempotency: IdempotencyService,
    private readonly customers: CustomersService,
    private readonly vipTiers: VipTiersService,
    private readonly events: EventsService,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /**
   * Posts an entry to the ledger of `customer`, which the caller locked in the same unit of work
   * (CustomersService.lock). A credit places the customer in the VIP tier it earns them. Records
   * `points_transaction.created` (with the customer after the entry), then the credit's
   * `customer.vip_tier_changed` when it moved them. Answers the customer after the entry; the
   * caller's `customer` is left as it was.
   */
  async post(w: Work, customer: LockedCustomer, entry: LedgerEntry): Promise<Posted> {
    const counts = entry.countsAsEarned !== false;
    const { balance, earned } = checkCredit(customer, entry.pointsChange, counts);
    const transaction = await insertPointsTransaction(w.trx, this.entryRow(w, customer, entry));
    const placed = counts && entry.pointsChange > 0 ? await this.vipTiers.place(w, customer) : undefined;
    // What the database now holds: the ledger's trigger moved the balance, points earned,
    // updated_at and last_active_at (to the entry's created_at, the work's time); the placement set its columns.
    const after: LockedCustomer = {
      ...customer,
      ...placed?.fields,
      pointsBalance: balance,
      pointsEarned: earned,
      updatedAt: w.now,
      lastActiveAt: Math.max(customer.lastActiveAt ?? w.now, w.now),
    };
    await this.announce(w, transaction, after);
    if (placed?.move) this.vipTiers.announce(w, customer.accountId, placed.move);
    return { transaction, customer: after };
  }

  /** The row of `entry` on `customer`'s ledger, written at the work's time. */
  private entryRow(w: Work, customer: LockedCustomer, entry: LedgerEntry) {
    return {
      account_id: customer.accountId,
      customer_id: customer.id,
      points_change: entry.pointsChange,
      description: entry.description,
      internal_note: entry.internalNote,
      activity_id: entry.activityId ?? null,
      points_purchase_id: entry.pointsPurchaseId ?? null,
      earning_rule_id: entry.earningRuleId ?? null,
      occurred_at: entry.occurredAt ?? w.now,
      created_at: w.now,
      updated_at: w.now,
      created_by_user_id: entry.createdByUserId ?? null,
      counts_as_earned: entry.countsAsEarned !== false ? 1 : 0,
    };
  }

  /**
   * Posts an entry each to customers the caller locked, in one statement (an import's balances, and
   * their corrections): the entries, in their order. Neither places the customers nor records
   * events: the caller does both once the rest of its work on them is done (`announce`).
   */
  async creditMany(
    w: Work,
    credits: readonly { customer: LockedCustomer; entry: LedgerEntry }[],
  ): Promise<PointsTransaction[]> {
    const rows = credits.map(({ customer, entry }) => {
      checkCredit(customer, entry.pointsChange);
      return this.entryRow(w, customer, entry);
    });
    return insertPointsTransactions(w.trx, rows);
  }

  /** Records `points_transaction.created` for an entry (of `post` or creditMany), showing `customer` as the work left them. */
  async announce(w: Work, transaction: PointsTransaction, customer: LockedCustomer): Promise<void> {
    this.events.record(w, customer.accountId, 'points_transaction.created', {
      points_transaction: transaction,
      customer: await this.customers.shownIn(w, customer),
    });
  }

  /**
   * A manual change to a customer's balance (`POST /v1/points_transactions`, the console's
   * adjustment), in the caller's unit of work. `createdByUserId`: the console user who made it
   * (the API's entries have none), recorded but not part of the API's answer.
   */
  async create(
    w: Work,
    accountId: number,
    input: PointsTransactionInput,
    createdByUserId?: number,
  ): Promise<PointsTransaction> {
    const customer = await this.customers.lock(w, accountId, input.customer_id);
    if (!customer) throw invalidParameter('points_transaction.customer_id', `names no customer of this account`);
    const entry = {
      pointsChange: input.points_change,
      description: input.description ?? '',
      internalNote: input.internal_note ?? null,
      ...(createdByUserId === undefined ? {} : { createdByUserId }),
    };
    return (await this.post(w, customer, entry)).transaction;
  }

  /**
   * `create` in a unit of work of its own, for the console, the CLI and tests. With `key` (the
   * console's form key) it is idempotent like the API's `Idempotency-Key`: the same change sent
   * again within 24 hours writes nothing.
   */
  async adjust(
    accountId: number,
    input: PointsTransactionInput,
    options: { key?: string; createdByUserId?: number } = {},
  ): Promise<void> {
    await this.idempotency.run(
      manualChangeRequest(accountId, input, options.key),
      201,
      (w) => this.create(w, accountId, input, options.createdByUserId),
      JSON.stringify,
    );
  }

  /** How many credits `ruleId` gave the customer, in all (a lifetime limit), as the work's transaction sees them. */
  countCredits(w: Work, customerId: number, ruleId: number): Promise<number> {
    return countCredits(w.trx, customerId, ruleId);
  }

  /** How many credits `ruleId` gave the customer with a time in (after, upTo], as the work's transaction sees them. */
  countCreditsIn(w: Work, reach: { customerId: number; ruleId: number; after: number; upTo: number }): Promise<number> {
    return countCreditsIn(w.trx, reach);
  }

  /**
   * The times of the credits `ruleId` gave the customer in (after, time] and (time, upTo], at
   * least the `each` nearest to `time` on either side: what a rolling limit checks.
   */
  creditTimesAround(
    w: Work,
    around: { customerId: number; ruleId: number; after: number; time: number; upTo: number; each: number },
  ): Promise<CreditTimesAround> {
    return findCreditTimesAround(w.trx, around);
  }

  /** The transactions an activity credited, ascending id. */
  ofActivity(activityId: number): Promise<PointsTransaction[]> {
    return findActivityTransactions(this.db, activityId);
  }

  /** The account's transaction; `404 not_found` for an id the account does not have. */
  async get(accountId: number, id: number): Promise<PointsTransaction> {
    const transaction = await findPointsTransaction(this.db, accountId, id);
    if (!transaction) throw notFound(`points transaction ${id} does not exist`);
    return transaction;
  }

  /** One page of the account's transactions matching the query's filters, id descending. */
  async page(accountId: number, query: PointsTransactionsQuery): Promise<PointsTransactionsPage> {
    const filters = this.filters(query);
    const page = await keysetPage({
      codec: await this.cursors.codec(POINTS_TRANSACTIONS_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      filters,
      fetch: (direction, boundary, rows) =>
        findPointsTransactionsPage(this.db, accountId, filters, direction, boundary, rows),
    });
    return { points_transactions: page.items, metadata: page.metadata };
  }

  /**
   * Transactions for an export, read through `db` (a snapshot): up to `limit` matching the API's
   * list filters with ids below `before` (null: from the newest), id descending, as the API shows
   * them; and the boundary of the next page (undefined: none left).
   */
  async exportPage(
    db: Kysely<Database>,
    accountId: number,
    query: Pick<PointsTransactionsQuery, 'customer_id' | 'updated_at_min'>,
    before: number | null,
    limit: number,
  ): Promise<{ rows: PointsTransaction[]; next: number | undefined }> {
    const rows = await findPointsTransactionsPage(db, accountId, this.filters(query), 'next', before, limit);
    return { rows, next: rows.length === limit ? rows[rows.length - 1]!.id : undefined };
  }

  /** The API's list filters, as the repository takes them. */
  private filters(query: Pick<PointsTransactionsQuery, 'customer_id' | 'updated_at_min'>): PointsTransactionFilters {
    return {
      ...(query.customer_id === undefined ? {} : { customerId: query.customer_id }),
      ...(query.updated_at_min === undefined
        ? {}
        : { updatedAtMin: parseTime(query.updated_at_min, 'updated_at_min') }),
    };
  }
}

/**
 * The balance and points earned `change` leaves `customer` with: `insufficient_points` when the
 * balance would go below 0, `invalid_parameter` when either would pass MAX_BALANCE. Every post
 * checks it, one entry (`post`) or many (`creditMany`).
 */
function checkCredit(customer: LockedCustomer, change: number, counts = true): { balance: number; earned: number } {
  const balance = customer.pointsBalance + change;
  if (balance < 0) throw insufficientPoints(customer, change);
  const earned = customer.pointsEarned + (counts ? Math.max(change, 0) : 0);
  if (balance > MAX_BALANCE || earned > MAX_BALANCE) {
    throw invalidParameter('points_change', `would take customer ${customer.id}'s points above ${MAX_BALANCE}`);
  }
  return { balance, earned };
}

/** `422 insufficient_points`: the change would take the customer's balance below 0. */
export function insufficientPoints(customer: LockedCustomer, change: number): DomainError {
  return new DomainError(
    'insufficient_points',
    `customer ${customer.id} has ${customer.pointsBalance} points: a change of ${change} would take the balance below 0`,
  );
}
