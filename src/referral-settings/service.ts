import type { AccountsService } from '../accounts/service.js';
import { notFound } from '../errors.js';
import { AccountCache, CACHE_MAX_AGE_MS } from '../storage/change-feed.js';
import type { Db } from '../storage/db.js';
import type { UnitOfWork } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import { deleteReferralSettings, findReferralSettings, upsertReferralSettings } from './repository.js';
import { ReferralSettings } from './schemas.js';

/** The account's referral program: at most one per account. */
export class ReferralSettingsService {
  // On PostgreSQL, kept in memory until a change notification (see AccountCache).
  private readonly cache: AccountCache<ReferralSettings | undefined>;

  constructor(
    private readonly db: Db,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
  ) {
    this.cache = new AccountCache(db.changes, 'referral_settings', CACHE_MAX_AGE_MS);
  }

  /** The settings, or `404 not_found` when the account never set up a program (or deleted it). */
  async get(accountId: number): Promise<ReferralSettings> {
    const settings = await this.cache.get(accountId, () => findReferralSettings(this.db.kysely, accountId));
    if (!settings) throw notFound('this account has not set up a referral program');
    return settings;
  }

  /** Validates and stores the settings, replacing any earlier ones. */
  async set(accountId: number, input: unknown): Promise<ReferralSettings> {
    const settings = validate(ReferralSettings, input, 'referral_settings');
    await this.accounts.require(accountId);
    await this.uow.run(({ trx, now }) => upsertReferralSettings(trx, accountId, settings, now));
    this.cache.forget(accountId);
    return this.get(accountId);
  }

  /** Deletes the program; `404 not_found` when the account has none. */
  async delete(accountId: number): Promise<{ deleted: true }> {
    await this.accounts.require(accountId);
    const deleted = await this.uow.run(({ trx }) => deleteReferralSettings(trx, accountId));
    this.cache.forget(accountId);
    if (!deleted) {
      throw notFound(`account ${accountId} has no referral settings`);
    }
    return { deleted: true };
  }
}
