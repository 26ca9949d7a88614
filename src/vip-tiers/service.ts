import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import { invalidParameter, notFound } from '../errors.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import {
  assignAccountTiers,
  assignCustomerTier,
  deleteTier,
  findTier,
  insertTier,
  listTiers,
  lockAccountTiers,
  updateTier,
} from './repository.js';
import { type VipTier, VipTierChange, VipTierInput } from './schemas.js';

const milestoneTaken = (milestone: number) =>
  invalidParameter('vip_tier.milestone', `must differ from every other tier's: another tier has ${milestone}`);

/** Where placing a customer put them, when it moved them (null: in no tier). */
export interface TierMove {
  readonly vipTierId: number | null;
}

/**
 * VIP tiers of an all-time program: a customer is in the tier with the highest milestone at or
 * below their points earned. Every change to the tiers places the account's customers again in
 * the same transaction.
 */
export class VipTiersService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
  ) {}

  /** The account's tiers, ascending milestone. */
  async list(accountId: number): Promise<VipTier[]> {
    return listTiers(this.db, accountId);
  }

  /**
   * Places one customer in the tier their points earned give them, in the work's transaction
   * (after a credit, or as a new customer): their new tier when it changed, undefined otherwise.
   */
  place(w: Work, customerId: number): Promise<TierMove | undefined> {
    return assignCustomerTier(w.trx, customerId, w.now);
  }

  /** Creates a tier and places the account's customers again. */
  async create(accountId: number, input: unknown): Promise<VipTier> {
    const tier = validate(VipTierInput, input, 'vip_tier');
    await this.accounts.require(accountId);
    return this.uow.run(async (w) => {
      await lockAccountTiers(w.trx, accountId);
      const created = await insertTier(w.trx, accountId, tier, w.now);
      if (!created) throw milestoneTaken(tier.milestone);
      await assignAccountTiers(w.trx, accountId, w.now);
      return created;
    });
  }

  /** Changes the fields given and places the account's customers again; `404` for an unknown id. */
  async update(id: number, input: unknown): Promise<VipTier> {
    const change = validate(VipTierChange, input, 'vip_tier');
    return this.uow.run(async (w) => {
      const existing = await this.require(w, id);
      const updated = await updateTier(w.trx, id, change, w.now);
      if (updated === 'milestone_taken') throw milestoneTaken(change.milestone ?? 0);
      if (!updated) throw notFound(`VIP tier ${id} does not exist`);
      await assignAccountTiers(w.trx, existing.accountId, w.now);
      return updated;
    });
  }

  /** Deletes a tier; its customers move to the tier their points earned give them. */
  async delete(id: number): Promise<{ deleted: true }> {
    await this.uow.run(async (w) => {
      const existing = await this.require(w, id);
      await deleteTier(w.trx, id);
      await assignAccountTiers(w.trx, existing.accountId, w.now);
    });
    return { deleted: true };
  }

  /** The tier, with its account's tiers locked for this transaction; `404` for an unknown id. */
  private async require(w: Work, id: number) {
    const tier = await findTier(w.trx, id);
    if (!tier) throw notFound(`VIP tier ${id} does not exist`);
    await lockAccountTiers(w.trx, tier.accountId);
    return tier;
  }
}
