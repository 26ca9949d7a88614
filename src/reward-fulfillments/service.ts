import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { parseTime } from '../customers/service.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { Database } from '../storage/schema.js';
import { type FulfillmentFilters, findFulfillmentsPage } from './repository.js';
import type { RewardFulfillmentsPage, RewardFulfillmentsQuery } from './schemas.js';

const REWARD_FULFILLMENTS_CURSOR = { resource: 'reward_fulfillments', filtered: true };

/** The rewards issued to an account's customers (by purchases), with their codes. */
export class RewardFulfillmentsService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    clock: Clock,
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
}
