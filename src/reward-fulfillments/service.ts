import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { EventsService } from '../events/service.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { Database } from '../storage/schema.js';
import type { Work } from '../storage/unit-of-work.js';
import { parseTime } from '../time.js';
import { newRewardCode } from './code.js';
import {
  type FulfillmentFilters,
  findFulfillmentsByIds,
  findFulfillmentsPage,
  insertFulfillmentIfCodeFree,
} from './repository.js';
import type { RewardFulfillment, RewardFulfillmentsPage, RewardFulfillmentsQuery } from './schemas.js';

const REWARD_FULFILLMENTS_CURSOR = { resource: 'reward_fulfillments', filtered: true };
/** Draws of a new code when one is taken in the account (with 80 random bits, never more than one). */
const CODE_ATTEMPTS = 5;

/** What a fulfillment is issued for: the customer, the purchase that pays for it (none for a referral's reward), and the reward. */
export interface FulfillmentOrder {
  accountId: number;
  customerId: number;
  pointsPurchaseId: number | null;
  reward: { name: string; imageUrl: string };
}

/** The rewards issued to an account's customers (by purchases and referrals), with their codes; issuing them too. */
export class RewardFulfillmentsService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    clock: Clock,
    private readonly events: EventsService,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /** One page of the account's fulfillments matching the query's filters, id descending. */
  async page(accountId: number, query: RewardFulfillmentsQuery): Promise<RewardFulfillmentsPage> {
    const filters: FulfillmentFilters = {
      ...(query.customer_id === undefined ? {} : { customerId: query.customer_id }),
      ...(query.fulfillment_status === undefined ? {} : { fulfillmentStatus: query.fulfillment_status }),
      ...(query.usage_status === undefined ? {} : { usageStatus: query.usage_status }),
      ...(query.updated_at_min === undefined
        ? {}
        : { updatedAtMin: parseTime(query.updated_at_min, 'updated_at_min') }),
    };
    const page = await keysetPage({
      codec: await this.cursors.codec(REWARD_FULFILLMENTS_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      filters,
      fetch: (direction, boundary, rows) =>
        findFulfillmentsPage(this.db, accountId, filters, direction, boundary, rows),
    });
    return { reward_fulfillments: page.items, metadata: page.metadata };
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
    const found = await findFulfillmentsByIds(db, accountId, ids);
    return new Map(found.map((fulfillment) => [fulfillment.id, fulfillment]));
  }

  /** The rewards issued to the customer (with their codes), newest first, at most `limit`. */
  async latestFor(accountId: number, customerId: number, limit = 20): Promise<RewardFulfillment[]> {
    return findFulfillmentsPage(this.db, accountId, { customerId }, 'next', null, limit);
  }
}
