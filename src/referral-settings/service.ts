import type { AccountsService } from '../accounts/service.js';
import { decimalText, readAmount } from '../activities/decimal.js';
import type { ActivityTypesService } from '../activity-types/service.js';
import { DomainError, type ErrorDetail, notFound } from '../errors.js';
import { AccountCache, CACHE_MAX_AGE_MS } from '../storage/change-feed.js';
import type { Db } from '../storage/db.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import { deleteReferralSettings, findReferralProgram, upsertReferralProgram } from './repository.js';
import {
  PROGRAM_FIELDS,
  PROGRAM_REWARD_FIELDS,
  type ProgramReward,
  REFERRAL_PROGRAM_LIMITS,
  type ReferralProgram,
  ReferralProgramInput,
  type ReferralSettings,
} from './schemas.js';

const ROOT = 'referral_settings';

/**
 * The account's referral program: at most one per account. The spec's settings (what
 * `GET /v1/referral_settings` shows) and what runs the program (docs/referrals.md).
 */
export class ReferralSettingsService {
  // On PostgreSQL, kept in memory until a change notification (see AccountCache).
  private readonly cache: AccountCache<ReferralProgram | undefined>;

  constructor(
    private readonly db: Db,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
    private readonly activityTypes: ActivityTypesService,
  ) {
    this.cache = new AccountCache(db.changes, 'referral_settings', CACHE_MAX_AGE_MS);
  }

  /** The settings, or `404 not_found` when the account never set up a program (or deleted it). */
  async get(accountId: number): Promise<ReferralSettings> {
    const program = await this.program(accountId);
    if (!program) throw notFound('this account has not set up a referral program');
    return specSettings(program);
  }

  /** The whole program, or undefined when the account has none. */
  program(accountId: number): Promise<ReferralProgram | undefined> {
    return this.cache.get(accountId, () => findReferralProgram(this.db.kysely, accountId));
  }

  /**
   * The program, for a unit of work: from the cache, or read on the work's own connection (a
   * transaction that waited for a second connection of the pool could exhaust it); never after a
   * wait for a later turn of the event loop, which would break up SQLite's commit groups.
   */
  programIn(w: Work, accountId: number): Promise<ReferralProgram | undefined> {
    return this.cache.getNow(accountId, () => findReferralProgram(w.trx, accountId));
  }

  /**
   * Validates and stores the program, replacing any earlier one (fields left out take their
   * defaults). An active program that configures any field beyond the spec's needs a qualifying
   * activity type of the account and a landing URL.
   */
  async set(accountId: number, input: unknown): Promise<ReferralProgram> {
    const given = validate(ReferralProgramInput, input, ROOT);
    await this.accounts.require(accountId);
    const program = await this.check(accountId, given);
    await this.uow.run(({ trx, now }) => upsertReferralProgram(trx, accountId, program, now));
    this.cache.forget(accountId);
    return program;
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

  /** The program `given` describes, defaults filled in; every field's refusal at once. */
  private async check(accountId: number, given: ReferralProgramInput): Promise<ReferralProgram> {
    const problems: ErrorDetail[] = [];
    const refuse = (field: string, message: string) => problems.push({ field: `${ROOT}.${field}`, message });
    const reward = (side: 'sender_reward' | 'receiver_reward'): ProgramReward => {
      const input = given[side];
      const fulfillment = input.fulfillment ?? 'code';
      const points = fulfillment === 'points' ? (input.points ?? null) : null;
      if (fulfillment === 'points' && points === null) {
        refuse(
          `${side}.points`,
          `is required when fulfillment is points (${REFERRAL_PROGRAM_LIMITS.rewardPoints.min} to ${REFERRAL_PROGRAM_LIMITS.rewardPoints.max})`,
        );
      }
      return { name: input.name, image: input.image, fulfillment, points };
    };
    const program: ReferralProgram = {
      status: given.status,
      sender_reward: reward('sender_reward'),
      receiver_reward: reward('receiver_reward'),
      qualifying_activity_token: given.qualifying_activity_token ?? null,
      minimum_amount: '0',
      window_days: given.window_days ?? REFERRAL_PROGRAM_LIMITS.windowDays.default,
      landing_url: given.landing_url ?? null,
      sender_limit_per_30_days: given.sender_limit_per_30_days ?? REFERRAL_PROGRAM_LIMITS.senderLimit.default,
    };
    if (given.minimum_amount !== undefined) {
      const amount = readAmount(given.minimum_amount);
      if (typeof amount === 'string') refuse('minimum_amount', amount);
      else program.minimum_amount = decimalText(amount);
    }
    if (program.landing_url !== null && !program.landing_url.startsWith('https://')) {
      refuse('landing_url', "must be an https:// URL (the merchant's store)");
    }
    const token = program.qualifying_activity_token;
    if (token !== null && !(await this.activityTypes.byToken(accountId, token))) {
      refuse('qualifying_activity_token', 'names no activity type of this account');
    }
    // A plain ReferralSettings object (the spec's shape, which `referral-settings set` has always
    // taken) stays valid as it is: its program runs once configured (see ReferralsService.running).
    if (program.status === 'active' && configuresProgram(given)) {
      if (token === null) refuse('qualifying_activity_token', 'is required for an active program');
      if (program.landing_url === null) refuse('landing_url', 'is required for an active program');
    }
    const first = problems[0];
    if (first) throw new DomainError('invalid_parameter', `${first.field} ${first.message}`, problems);
    return program;
  }
}

/** Whether the input names any field of the running program beyond the spec's shape. */
function configuresProgram(given: ReferralProgramInput): boolean {
  return (
    PROGRAM_FIELDS.some((field) => given[field] !== undefined) ||
    [given.sender_reward, given.receiver_reward].some((reward) =>
      PROGRAM_REWARD_FIELDS.some((field) => reward[field] !== undefined),
    )
  );
}

/** The spec's shape of the program: what `GET /v1/referral_settings` shows. */
export function specSettings(program: ReferralProgram): ReferralSettings {
  const reward = (r: ProgramReward) => ({ name: r.name, image: r.image });
  return {
    status: program.status,
    sender_reward: reward(program.sender_reward),
    receiver_reward: reward(program.receiver_reward),
  };
}
