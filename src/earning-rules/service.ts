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
}
