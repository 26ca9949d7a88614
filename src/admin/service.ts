import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from '../storage/schema.js';
import { DAY_MS } from '../time.js';
import {
  adjustmentStaff,
  type CustomerActivity,
  latestActivities,
  type ProgramFigures,
  pointsChanges,
  programFigures,
  type SetupProgress,
  setupProgress,
} from './repository.js';

/** What the console shows that the API has no operation for: the program's figures, a customer's activities and who adjusted their points. */
export class AdminService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Customers; points issued and spent in the last 30 days; activities since midnight UTC. */
  async figures(accountId: number): Promise<ProgramFigures & { since: number; today: number }> {
    const now = this.clock.now();
    const since = now - 30 * DAY_MS;
    const today = now - (now % DAY_MS);
    return { ...(await programFigures(this.db, accountId, since, today)), since, today };
  }

  /** Which steps of the overview's setup checklist the account has taken. */
  async setupProgress(accountId: number): Promise<SetupProgress> {
    return setupProgress(this.db, accountId);
  }

  /** The customer's latest `limit` activities with the points each credited. */
  async latestActivities(accountId: number, customerId: number, limit = 20): Promise<CustomerActivity[]> {
    return latestActivities(this.db, accountId, customerId, limit);
  }

  /** The console users who made these points transactions (manual adjustments), by transaction id. */
  async adjustmentStaff(accountId: number, transactionIds: readonly number[]): Promise<Map<number, string>> {
    return adjustmentStaff(this.db, accountId, transactionIds);
  }

  /** The points each of these transactions moved (a referral's reward given as points), by transaction id. */
  async pointsChanges(accountId: number, transactionIds: readonly number[]): Promise<Map<number, number>> {
    return pointsChanges(this.db, accountId, transactionIds);
  }
}
