import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import type { Db } from '../storage/db.js';

/** Earning rules and their keyset pages (spec 4.3). */
export class EarningRulesService {
  constructor(
    readonly db: Db,
    readonly clock: Clock,
    readonly accounts: AccountsService,
  ) {}

  /** PLACEHOLDER until issue 4 lands: creates one rule or an array of rules from CLI input. */
  async create(_accountId: number, _input: unknown): Promise<unknown> {
    throw new Error('earning rules are not implemented yet');
  }
}
