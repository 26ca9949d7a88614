import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import { findPointsSettings, upsertPointsSettings } from './repository.js';
import { DEFAULT_POINTS_SETTINGS, PointsSettings } from './schemas.js';

/** The account's points settings: `Point` / `Points` until the merchant names them. */
export class PointsSettingsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
  ) {}

  /** The account's labels, or the defaults when the merchant never named them. */
  async get(accountId: number): Promise<PointsSettings> {
    return (await findPointsSettings(this.db, accountId)) ?? DEFAULT_POINTS_SETTINGS;
  }

  /** Validates and stores the labels, replacing earlier ones. */
  async set(accountId: number, input: unknown): Promise<PointsSettings> {
    const settings = validate(PointsSettings, input, 'points_settings');
    await this.accounts.require(accountId);
    await this.uow.run(({ trx, now }) => upsertPointsSettings(trx, accountId, settings, now));
    return this.get(accountId);
  }
}
