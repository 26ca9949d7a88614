import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { type CustomerSearch, searchCustomersPage } from '../customers/repository.js';
import type { Customer } from '../customers/schemas.js';
import { toCustomer } from '../customers/service.js';
import { Cursors, keysetPage, type PageMetadata } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import { findFulfillmentsPage } from '../reward-fulfillments/repository.js';
import type { RewardFulfillment } from '../reward-fulfillments/schemas.js';
import type { Database } from '../storage/schema.js';
import { listTiers } from '../vip-tiers/repository.js';
import type { VipTier } from '../vip-tiers/schemas.js';
import {
  adjustmentStaff,
  type CustomerActivity,
  latestActivities,
  type ProgramFigures,
  programFigures,
} from './repository.js';

const DAY_MS = 24 * 3600 * 1000;
/** The console's customer search has cursors of its own kind, bound to its filters (the API's list takes other ones). */
const CUSTOMER_SEARCH_CURSOR = { resource: 'customers_console_search', filtered: true };

/** One page of the console's customer search, with the account's tiers (to name each customer's). */
export interface CustomerSearchPage {
  customers: Customer[];
  metadata: PageMetadata;
  tiers: VipTier[];
}

/** What the console shows that the API has no operation for: the program's figures, a customer's activities. */
export class ReportsService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /** Customers; points issued and spent in the last 30 days; activities since midnight UTC. */
  async figures(accountId: number): Promise<ProgramFigures & { since: number; today: number }> {
    const now = this.clock.now();
    const since = now - 30 * DAY_MS;
    const today = now - (now % DAY_MS);
    return { ...(await programFigures(this.db, accountId, since, today)), since, today };
  }

  /** The customer's latest `limit` activities with the points each credited. */
  async latestActivities(accountId: number, customerId: number, limit = 20): Promise<CustomerActivity[]> {
    return latestActivities(this.db, accountId, customerId, limit);
  }

  /**
   * One page of the account's customers matching the console's search (id descending, keyset
   * cursors bound to the search): part of an email or name, a state, a tier. The API's list
   * keeps its own contract (an exact email).
   */
  async searchCustomers(accountId: number, search: CustomerSearch, cursor?: string): Promise<CustomerSearchPage> {
    // One JSON form per search for the cursor's digest: keys in a fixed order, absent ones left out.
    const filters = {
      ...(search.text === undefined ? {} : { text: search.text }),
      ...(search.state === undefined ? {} : { state: search.state }),
      ...(search.tierId === undefined ? {} : { tierId: search.tierId }),
    };
    const [page, tiers] = await Promise.all([
      keysetPage({
        codec: await this.cursors.codec(CUSTOMER_SEARCH_CURSOR),
        accountId,
        limit: DEFAULT_LIMIT,
        cursor,
        filters,
        fetch: (direction, boundary, rows) =>
          searchCustomersPage(this.db, accountId, filters, direction, boundary, rows),
      }),
      listTiers(this.db, accountId),
    ]);
    return { customers: page.items.map((row) => toCustomer(row, tiers)), metadata: page.metadata, tiers };
  }

  /** The rewards issued to the customer (with their codes), newest first, at most `limit`. */
  async latestRewards(accountId: number, customerId: number, limit = 20): Promise<RewardFulfillment[]> {
    return findFulfillmentsPage(this.db, accountId, { customerId }, 'next', null, limit);
  }

  /** The console users who made these points transactions (manual adjustments), by transaction id. */
  async adjustmentStaff(accountId: number, transactionIds: readonly number[]): Promise<Map<number, string>> {
    return adjustmentStaff(this.db, accountId, transactionIds);
  }
}
