import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import type { Db } from '../storage/db.js';

/** Customer identities and the customers they link to (spec 4.2). */
export class CustomerIdentitiesService {
  constructor(
    readonly db: Db,
    readonly clock: Clock,
    readonly accounts: AccountsService,
  ) {}
}
