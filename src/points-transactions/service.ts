import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { lockCustomer } from '../customers/repository.js';
import { parseTime } from '../customers/service.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import { type Answer, fingerprint, type IdempotencyService } from '../idempotency/service.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { CustomerRow, Database } from '../storage/schema.js';
import { assignTiers } from '../vip-tiers/repository.js';
import {
  findPointsTransaction,
  findPointsTransactionsPage,
  insertPointsTransaction,
  type PointsTransactionFilters,
} from './repository.js';
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
  /** The purchase a debit paid for. */
  pointsPurchaseId?: number;
  earningRuleId?: number;
  occurredAt?: number;
  /** The console user who made a manual adjustment (kept for the console; never in the API's answer). */
  createdByUserId?: number;
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
    private readonly clock: Clock,
    private readonly idempotency: IdempotencyService,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /**
   * Posts an entry to the ledger of `customer`, which the caller locked in `trx` (lockCustomer);
   * its balance and points earned are updated in place, and its VIP tier follows a credit.
   */
  async post(
    trx: Kysely<Database>,
    customer: CustomerRow,
    entry: LedgerEntry,
    now: number,
  ): Promise<PointsTransaction> {
    const balance = customer.points_balance + entry.pointsChange;
    if (balance < 0) throw insufficientPoints(customer, entry.pointsChange);
    const earned = customer.points_earned + Math.max(entry.pointsChange, 0);
    if (balance > MAX_BALANCE || earned > MAX_BALANCE) {
      throw invalidParameter('points_change', `would take customer ${customer.id}'s points above ${MAX_BALANCE}`);
    }
    const transaction = await insertPointsTransaction(trx, {
      account_id: customer.account_id,
      customer_id: customer.id,
      points_change: entry.pointsChange,
      description: entry.description,
      internal_note: entry.internalNote,
      activity_id: entry.activityId ?? null,
      points_purchase_id: entry.pointsPurchaseId ?? null,
      earning_rule_id: entry.earningRuleId ?? null,
      occurred_at: entry.occurredAt ?? now,
      created_at: now,
      updated_at: now,
      created_by_user_id: entry.createdByUserId ?? null,
    });
    customer.points_balance = balance;
    customer.points_earned = earned;
    customer.updated_at = now;
    if (entry.pointsChange > 0) await assignTiers(trx, { customerId: customer.id }, now);
    return transaction;
  }

  /**
   * `POST /v1/points_transactions`: a manual change to a customer's balance, with the contract's
   * `Idempotency-Key`. Answers `201` with `serialize(transaction)`. `createdByUserId`: the console
   * user who made it (the API's entries have none), recorded but not part of the answer.
   */
  async create(
    accountId: number,
    input: PointsTransactionInput,
    key: string | undefined,
    serialize: (transaction: PointsTransaction) => string,
    createdByUserId?: number,
  ): Promise<Answer> {
    const request = { accountId, key, fingerprint: fingerprint('POST /v1/points_transactions', input) };
    return this.idempotency.run(
      request,
      201,
      async (trx) => {
        const customer = await lockCustomer(trx, accountId, input.customer_id);
        if (!customer) {
          throw invalidParameter('points_transaction.customer_id', `names no customer of this account`);
        }
        const entry = {
          pointsChange: input.points_change,
          description: input.description ?? '',
          internalNote: input.internal_note ?? null,
          ...(createdByUserId === undefined ? {} : { createdByUserId }),
        };
        return this.post(trx, customer, entry, this.clock.now());
      },
      serialize,
    );
  }

  /** The account's transaction; `404 not_found` for an id the account does not have. */
  async get(accountId: number, id: number): Promise<PointsTransaction> {
    const transaction = await findPointsTransaction(this.db, accountId, id);
    if (!transaction) throw notFound(`points transaction ${id} does not exist`);
    return transaction;
  }

  /** One page of the account's transactions matching the query's filters, id descending. */
  async page(accountId: number, query: PointsTransactionsQuery): Promise<PointsTransactionsPage> {
    const filters: PointsTransactionFilters = {
      ...(query.customer_id === undefined ? {} : { customerId: query.customer_id }),
      ...(query.updated_at_min === undefined
        ? {}
        : { updatedAtMin: parseTime(query.updated_at_min, 'updated_at_min') }),
    };
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
}

/** `422 insufficient_points`: the change would take the customer's balance below 0. */
export function insufficientPoints(customer: CustomerRow, change: number): DomainError {
  return new DomainError(
    'insufficient_points',
    `customer ${customer.id} has ${customer.points_balance} points: a change of ${change} would take the balance below 0`,
  );
}
