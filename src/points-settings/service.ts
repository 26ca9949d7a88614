import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Database } from '../storage/schema.js';
import { OncePerWork, type UnitOfWork, type Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import { findExpiringAccounts, findPointsSettings, upsertPointsSettings } from './repository.js';
import { DEFAULT_POINTS_SETTINGS, type PointsSettings, PointsSettingsInput } from './schemas.js';

/** The account's points settings: `Point` / `Points` and no expiry until the merchant sets them. */
export class PointsSettingsService {
  /** Each unit of work's reads of an account's expiry (see expiryIn). */
  private readonly expiryOfWork = new OncePerWork<number, number | null>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
  ) {}

  /** The account's settings, or the defaults when the merchant never set them. */
  async get(accountId: number, db: Kysely<Database> = this.db): Promise<PointsSettings> {
    return (await findPointsSettings(db, accountId)) ?? DEFAULT_POINTS_SETTINGS;
  }

  /** Validates and stores a change: each field left out stays as it was. */
  async set(accountId: number, input: unknown): Promise<PointsSettings> {
    const change = validate(PointsSettingsInput, input, 'points_settings');
    await this.accounts.require(accountId);
    await this.uow.run(({ trx, now }) => upsertPointsSettings(trx, accountId, change, now));
    return this.get(accountId);
  }

  /** The account's days of inactivity before a balance expires (null: never), read with `db`. */
  async expiryDays(accountId: number, db: Kysely<Database> = this.db): Promise<number | null> {
    return (await this.get(accountId, db)).points_expiry?.inactivity_days ?? null;
  }

  /** The same, read once per unit of work in its transaction: what the customers a work shows are told. */
  expiryIn(w: Work, accountId: number): Promise<number | null> {
    return this.expiryOfWork.get(w, accountId, () => this.expiryDays(accountId, w.trx));
  }

  /** The accounts whose balances expire, with their days of inactivity. */
  expiringAccounts(): Promise<{ accountId: number; inactivityDays: number }[]> {
    return findExpiringAccounts(this.db);
  }
}
