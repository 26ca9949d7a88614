import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import { randomBase62 } from '../auth/secrets.js';
import { invalidParameter } from '../errors.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import { findActivityTypeByToken, insertActivityType, listActivityTypes } from './repository.js';
import { ACTIVITY_TOKEN_PREFIX, ACTIVITY_TOKEN_RANDOM_CHARS, type ActivityType, ActivityTypeInput } from './schemas.js';

/** An account's activity types, each with the token integrators send. */
export class ActivityTypesService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
  ) {}

  /** A new type; `invalid_parameter` at `activity_type.name` when the account has one of that name. */
  async create(accountId: number, input: unknown): Promise<ActivityType> {
    const { name } = validate(ActivityTypeInput, input, 'activity_type');
    await this.accounts.require(accountId);
    // 20 base62 characters (119 bits): a collision within an account, which the unique
    // constraint would refuse, does not happen.
    const token = ACTIVITY_TOKEN_PREFIX + randomBase62(ACTIVITY_TOKEN_RANDOM_CHARS);
    const created = await this.uow.run(({ trx, now }) => insertActivityType(trx, accountId, name, token, now));
    if (created === 'name_taken') {
      throw invalidParameter('activity_type.name', 'is already the name of an activity type of this account');
    }
    return created;
  }

  /** The account's activity types, oldest first. */
  async list(accountId: number): Promise<ActivityType[]> {
    await this.accounts.require(accountId);
    return listActivityTypes(this.db, accountId);
  }

  /** The account's type that holds `token`, read inside `w` when given (an activity's transaction). */
  byToken(accountId: number, token: string, w?: Work): Promise<ActivityType | undefined> {
    return findActivityTypeByToken(w?.trx ?? this.db, accountId, token);
  }
}
