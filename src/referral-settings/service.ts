import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { notFound } from '../errors.js';
import type { Database } from '../storage/schema.js';
import { validate } from '../validate.js';
import { deleteReferralSettings, findReferralSettings, upsertReferralSettings } from './repository.js';
import { ReferralSettings } from './schemas.js';

/** The account's referral program: at most one per account. */
export class ReferralSettingsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
  ) {}

  /** The settings, or `404 not_found` when the account never set up a program (or deleted it). */
  async get(accountId: number): Promise<ReferralSettings> {
    const settings = await findReferralSettings(this.db, accountId);
    if (!settings) throw notFound('this account has not set up a referral program');
    return settings;
  }

  /** Validates and stores the settings, replacing any earlier ones. */
  async set(accountId: number, input: unknown): Promise<ReferralSettings> {
    const settings = validate(ReferralSettings, input, 'referral_settings');
    await this.accounts.require(accountId);
    await upsertReferralSettings(this.db, accountId, settings, this.clock.now());
    return this.get(accountId);
  }

  async delete(accountId: number): Promise<{ deleted: true }> {
    await this.accounts.require(accountId);
    if (!(await deleteReferralSettings(this.db, accountId))) {
      throw notFound(`account ${accountId} has no referral settings`);
    }
    return { deleted: true };
  }
}
