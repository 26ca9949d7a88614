import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import type { Database } from '../storage/schema.js';
import { validate } from '../validate.js';
import { findPointsSettings, upsertPointsSettings } from './repository.js';
import { DEFAULT_POINTS_SETTINGS, PointsSettings } from './schemas.js';

/** The account's points settings: `Point` / `Points` until the merchant names them. */
export class PointsSettingsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
  ) {}

  async get(accountId: number): Promise<PointsSettings> {
    return (await findPointsSettings(this.db, accountId)) ?? DEFAULT_POINTS_SETTINGS;
  }

  /** Validates and stores the labels, replacing earlier ones. */
  async set(accountId: number, input: unknown): Promise<PointsSettings> {
    const settings = validate(PointsSettings, input, 'points_settings');
    await this.accounts.require(accountId);
    await upsertPointsSettings(this.db, accountId, settings, this.clock.now());
    return this.get(accountId);
  }
}
