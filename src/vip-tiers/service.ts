import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { invalidParameter, notFound } from '../errors.js';
import { isUniqueViolation } from '../storage/errors.js';
import type { Database } from '../storage/schema.js';
import { validate } from '../validate.js';
import {
  assignTiers,
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

/**
 * VIP tiers of an all-time program: a customer is in the tier with the highest milestone at or
 * below their points earned. Every change to the tiers places the account's customers again in
 * the same transaction.
 */
export class VipTiersService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
  ) {}

  /** The account's tiers, ascending milestone. */
  async list(accountId: number): Promise<VipTier[]> {
    return listTiers(this.db, accountId);
  }

  /** Creates a tier and places the account's customers again. */
  async create(accountId: number, input: unknown): Promise<VipTier> {
    const tier = validate(VipTierInput, input, 'vip_tier');
    await this.accounts.require(accountId);
    return this.db.transaction().execute(async (trx) => {
      await lockAccountTiers(trx, accountId);
      const created = await insertTier(trx, accountId, tier, this.clock.now());
      if (!created) throw milestoneTaken(tier.milestone);
      await assignTiers(trx, { accountId }, this.clock.now());
      return created;
    });
  }

  /** Changes the fields given and places the account's customers again; `404` for an unknown id. */
  async update(id: number, input: unknown): Promise<VipTier> {
    const change = validate(VipTierChange, input, 'vip_tier');
    try {
      return await this.db.transaction().execute(async (trx) => {
        const existing = await this.require(trx, id);
        const updated = await updateTier(trx, id, change, this.clock.now());
        if (!updated) throw notFound(`VIP tier ${id} does not exist`);
        await assignTiers(trx, { accountId: existing.accountId }, this.clock.now());
        return updated;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw milestoneTaken(change.milestone ?? 0);
      throw error;
    }
  }

  /** Deletes a tier; its customers move to the tier their points earned give them. */
  async delete(id: number): Promise<{ deleted: true }> {
    await this.db.transaction().execute(async (trx) => {
      const existing = await this.require(trx, id);
      await deleteTier(trx, id);
      await assignTiers(trx, { accountId: existing.accountId }, this.clock.now());
    });
    return { deleted: true };
  }

  /** The tier, with its account's tiers locked for this transaction; `404` for an unknown id. */
  private async require(trx: Kysely<Database>, id: number) {
    const tier = await findTier(trx, id);
    if (!tier) throw notFound(`VIP tier ${id} does not exist`);
    await lockAccountTiers(trx, tier.accountId);
    return tier;
  }
}
