import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import type { CustomersService } from '../customers/service.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import type { EventsService } from '../events/service.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { PointsTransactionsService } from '../points-transactions/service.js';
import type { Database, RewardFulfillmentRow } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { DAY_MS, parseTime } from '../time.js';
import { newRewardCode } from './code.js';
import {
  type FulfillmentFilters,
  findFulfillmentRow,
  findFulfillmentsByIds,
  findFulfillmentsPage,
  findPointsSpent,
  insertFulfillmentIfCodeFree,
  markCancelled,
  markCodesUsed,
  markUsed,
  normalCode,
  toRewardFulfillment,
} from './repository.js';
import type { RewardFulfillment, RewardFulfillmentsPage, RewardFulfillmentsQuery, UseBody } from './schemas.js';

/** The list's filters, without its paging. */
type FulfillmentsFilterQuery = Omit<RewardFulfillmentsQuery, 'limit' | 'cursor'>;

const REWARD_FULFILLMENTS_CURSOR = { resource: 'reward_fulfillments', filtered: true };
/** Draws of a new code when one is taken in the account (with 80 random bits, never more than one). */
const CODE_ATTEMPTS = 5;

/** Most codes of one order (an activity's `properties.discount_codes`) looked up. */
const MAX_ORDER_CODES = 100;

/** What a fulfillment is issued for: the customer, the purchase that pays for it (none for a referral's reward), and the reward. */
export interface FulfillmentOrder {
  accountId: number;
  customerId: number;
  pointsPurchaseId: number | null;
  reward: { name: string; imageUrl: string };
  /** Days the code can be used (the product's expires_after_days); null or absent: forever. */
  expiresAfterDays?: number | null;
}

/** The rewards issued to an account's customers (by purchases and referrals), with their codes; issuing them too. */
export class RewardFulfillmentsService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly events: EventsService,
    private readonly customers: CustomersService,
    private readonly ledger: PointsTransactionsService,
    private readonly uow: UnitOfWork,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /** One page of the account's fulfillments matching the query's filters, id descending. */
  async page(accountId: number, query: RewardFulfillmentsQuery): Promise<RewardFulfillmentsPage> {
    const filters = this.filters(query);
    const now = this.clock.now();
    const page = await keysetPage({
      codec: await this.cursors.codec(REWARD_FULFILLMENTS_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      filters,
      fetch: (direction, boundary, rows) =>
        findFulfillmentsPage(this.db, accountId, filters, { direction, boundary, rows, now }),
    });
    return { reward_fulfillments: page.items, metadata: page.metadata };
  }

  /**
   * Fulfillments for an export, read through `db` (a snapshot): up to `limit` matching the API's
   * list filters with ids below `before` (null: from the newest), id descending, as the API shows
   * them at `now` (one instant for a whole export, so that no code expires between its pages); and
   * the boundary of the next page (undefined: none left).
   */
  async exportPage(
    db: Kysely<Database>,
    accountId: number,
    query: FulfillmentsFilterQuery,
    before: number | null,
    limit: number,
    now: number,
  ): Promise<{ rows: RewardFulfillment[]; next: number | undefined }> {
    const page = { direction: 'next' as const, boundary: before, rows: limit, now };
    const rows = await findFulfillmentsPage(db, accountId, this.filters(query), page);
    return { rows, next: rows.length === limit ? rows[rows.length - 1]!.id : undefined };
  }

  /** The API's list filters, as the repository takes them. */
  private filters(query: FulfillmentsFilterQuery): FulfillmentFilters {
    return {
      ...(query.customer_id === undefined ? {} : { customerId: query.customer_id }),
      ...(query.fulfillment_status === undefined ? {} : { fulfillmentStatus: query.fulfillment_status }),
      ...(query.usage_status === undefined ? {} : { usageStatus: query.usage_status }),
      ...(query.updated_at_min === undefined
        ? {}
        : { updatedAtMin: parseTime(query.updated_at_min, 'updated_at_min') }),
      ...(query.code === undefined ? {} : { code: normalCode(query.code) }),
    };
  }

  /**
   * Issues the reward of `order` in `w`: a fulfillment with a new code no other fulfillment of the
   * account has (a code drawn again while it is taken), issued and unused; records
   * `reward_fulfillment.created`.
   */
  async issue(w: Work, order: FulfillmentOrder): Promise<RewardFulfillment> {
    for (let attempt = 1; attempt <= CODE_ATTEMPTS; attempt++) {
      const fulfillment = await insertFulfillmentIfCodeFree(w.trx, {
        account_id: order.accountId,
        customer_id: order.customerId,
        points_purchase_id: order.pointsPurchaseId,
        name: order.reward.name,
        code: newRewardCode(),
        image_url: order.reward.imageUrl,
        fulfillment_status: 'issued',
        usage_status: 'unused',
        expires_at: order.expiresAfterDays ? w.now + order.expiresAfterDays * DAY_MS : null,
        created_at: w.now,
        updated_at: w.now,
      });
      if (fulfillment) {
        this.events.record(w, order.accountId, 'reward_fulfillment.created', { reward_fulfillment: fulfillment });
        return fulfillment;
      }
    }
    throw new Error(`no free reward code in ${CODE_ATTEMPTS} draws`);
  }

  /** The account's fulfillments with these ids, by id, read with `db` (a work's transaction, to see its own). */
  async byIds(
    db: Kysely<Database>,
    accountId: number,
    ids: readonly number[],
  ): Promise<Map<number, RewardFulfillment>> {
    const found = await findFulfillmentsByIds(db, accountId, ids, this.clock.now());
    return new Map(found.map((fulfillment) => [fulfillment.id, fulfillment]));
  }

  /** The account's fulfillment; `404` for an id it does not have. */
  async get(accountId: number, id: number): Promise<RewardFulfillment> {
    const found = (await this.byIds(this.db, accountId, [id])).get(id);
    if (!found) throw notFound(`reward fulfillment ${id} does not exist`);
    return found;
  }

  /** The rewards issued to the customer (with their codes), newest first, at most `limit`. */
  async latestFor(accountId: number, customerId: number, limit = 20): Promise<RewardFulfillment[]> {
    const page = { direction: 'next' as const, boundary: null, rows: limit, now: this.clock.now() };
    return findFulfillmentsPage(this.db, accountId, { customerId }, page);
  }

  /** A use in a transaction of its own, without an `Idempotency-Key` (see useIn): the CLI's and the console's. */
  use(accountId: number, id: number, body: UseBody = {}): Promise<RewardFulfillment> {
    return this.uow.run((w) => this.useIn(w, accountId, id, body));
  }

  /** A cancel in a transaction of its own, without an `Idempotency-Key` (see cancelIn). */
  cancel(accountId: number, id: number): Promise<RewardFulfillment> {
    return this.uow.run((w) => this.cancelIn(w, accountId, id));
  }

  /**
   * Marks the account's fulfillment used (at `used_at`, or now), in `w`: one conditional update,
   * so that of any number of uses at once exactly one succeeds. Refused, writing nothing, for a
   * code used already (`409 reward_already_used`), cancelled (`422 reward_cancelled`) or expired
   * (`422 reward_expired`). Records `reward_fulfillment.updated`.
   */
  async useIn(w: Work, accountId: number, id: number, body: UseBody): Promise<RewardFulfillment> {
    const usedAt = body.used_at === undefined ? w.now : parseTime(body.used_at, 'used_at');
    if (usedAt > w.now) throw invalidParameter('used_at', 'must not be in the future');
    const row = await markUsed(w.trx, { accountId, id, usedAt, now: w.now });
    if (!row) throw useRefusal(await findFulfillmentRow(w.trx, accountId, id), id, usedAt, w.now);
    return this.updated(w, row);
  }

  /**
   * Cancels the account's issued, unused fulfillment in `w` and gives back the points its purchase
   * spent: one points transaction described `Refund: <reward name>`, naming the purchase, not counted as earned. Its
   * customer is locked first (the order every transaction takes its locks in), then a conditional
   * update cancels it, so that of any number of cancels at once exactly one refunds. Anything but
   * an issued, unused, unexpired code is `409 reward_already_used`, writing nothing. Records
   * `reward_fulfillment.updated`, and the refund's `points_transaction.created`.
   */
  async cancelIn(w: Work, accountId: number, id: number): Promise<RewardFulfillment> {
    const before = await findFulfillmentRow(w.trx, accountId, id);
    if (!before) throw notFound(`reward fulfillment ${id} does not exist`);
    const customer = await this.customers.lock(w, accountId, Number(before.customer_id));
    const row = await markCancelled(w.trx, { accountId, id, now: w.now });
    if (!row || !customer) throw cancelRefusal(await findFulfillmentRow(w.trx, accountId, id), id, w.now);
    const fulfillment = this.updated(w, row);
    if (row.points_purchase_id !== null) {
      const purchaseId = Number(row.points_purchase_id);
      const spent = await findPointsSpent(w.trx, purchaseId);
      await this.ledger.post(w, customer, {
        pointsChange: spent,
        description: `Refund: ${row.name}`,
        internalNote: null,
        // The purchase it gives back, as the debit that paid for it names it.
        pointsPurchaseId: purchaseId,
        countsAsEarned: false,
      });
    }
    return fulfillment;
  }

  /**
   * An order used these codes (an activity's `properties.discount_codes`): the ones that are the
   * customer's issued, unused, unexpired codes are marked used at `usedAt`, in the activity's
   * transaction (whose customer is locked). Anything else in the list is left alone: an order may
   * carry the store's own discount codes too.
   */
  async useOrderCodes(w: Work, accountId: number, customerId: number, codes: unknown, usedAt: number): Promise<void> {
    if (!Array.isArray(codes)) return;
    const wanted = codes
      .filter((code): code is string => typeof code === 'string')
      .slice(0, MAX_ORDER_CODES)
      .map(normalCode)
      .filter((code) => code.length > 0);
    const rows = await markCodesUsed(w.trx, accountId, customerId, wanted, { usedAt, now: w.now });
    for (const row of rows) this.updated(w, row);
  }

  /** A fulfillment just changed, as the API shows it, with its `reward_fulfillment.updated`. */
  private updated(w: Work, row: RewardFulfillmentRow): RewardFulfillment {
    const fulfillment = toRewardFulfillment(row, w.now);
    this.events.record(w, Number(row.account_id), 'reward_fulfillment.updated', { reward_fulfillment: fulfillment });
    return fulfillment;
  }
}

/** Why a use changed nothing, read after it: the fulfillment as it stands. */
function useRefusal(row: RewardFulfillmentRow | undefined, id: number, usedAt: number, now: number): DomainError {
  if (!row) return notFound(`reward fulfillment ${id} does not exist`);
  if (row.usage_status === 'used') {
    return new DomainError(
      'reward_already_used',
      `reward fulfillment ${id} was used at ${isoTime(Number(row.used_at))}`,
    );
  }
  if (row.fulfillment_status !== 'issued') {
    return new DomainError(
      'reward_cancelled',
      `reward fulfillment ${id} is ${row.fulfillment_status}: it cannot be used`,
    );
  }
  if (row.expires_at !== null && Number(row.expires_at) <= now) {
    return new DomainError('reward_expired', `reward fulfillment ${id} expired at ${isoTime(Number(row.expires_at))}`);
  }
  if (usedAt < Number(row.created_at)) {
    return invalidParameter('used_at', `must not be before the reward was issued (${isoTime(Number(row.created_at))})`);
  }
  return new DomainError('reward_already_used', `reward fulfillment ${id} cannot be used (${row.usage_status})`);
}

/** Why a cancel changed nothing: anything but an issued, unused, unexpired code is refused alike. */
function cancelRefusal(row: RewardFulfillmentRow | undefined, id: number, now: number): DomainError {
  if (!row) return notFound(`reward fulfillment ${id} does not exist`);
  const state =
    row.usage_status === 'used'
      ? `was used at ${isoTime(Number(row.used_at))}`
      : row.fulfillment_status !== 'issued'
        ? `is ${row.fulfillment_status}`
        : row.expires_at !== null && Number(row.expires_at) <= now
          ? `expired at ${isoTime(Number(row.expires_at))}`
          : `is ${row.usage_status}`;
  return new DomainError(
    'reward_already_used',
    `reward fulfillment ${id} ${state}: only an issued, unused code can be cancelled`,
  );
}
