import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import { isoTime } from '../common-schemas.js';
import { invalidParameter, notFound } from '../errors.js';
import type { EventsService } from '../events/service.js';
import type { Database } from '../storage/schema.js';
import { OncePerWork, type UnitOfWork, type Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import {
  assignAccountTiers,
  assignCustomerTier,
  deleteTier,
  findTier,
  insertAccountTierChanges,
  insertTier,
  insertTierChange,
  listTiers,
  lockAccountTiers,
  type StoredTierChange,
  updateTier,
} from './repository.js';
import { type VipTier, type VipTierChange, VipTierInput, VipTierPatch, type VipTierSummary } from './schemas.js';

const milestoneTaken = (milestone: number) =>
  invalidParameter('vip_tier.milestone', `must differ from every other tier's: another tier has ${milestone}`);

/** Where placing a customer put them, when it moved them (null: in no tier), and the change as the API shows it. */
export interface TierMove {
  readonly vipTierId: number | null;
  readonly change: VipTierChange;
}

/** The customer `place` places: who, and the tier they are in before it. */
export interface PlacedCustomer {
  readonly id: number;
  readonly accountId: number;
  readonly vipTierId: number | null;
}

/**
 * VIP tiers of an all-time program: a customer is in the tier with the highest milestone at or
 * below their points earned. Every change to the tiers places the account's customers again in
 * the same transaction. Every move writes a `vip_tier_changes` row and a `customer.vip_tier_changed`
 * event in the transaction that made it.
 */
export class VipTiersService {
  /** The account's tiers as each unit of work first read them (a work that credits reads them once). */
  private readonly tiersOfWork = new OncePerWork<number, VipTier[]>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
    private readonly events: EventsService,
  ) {}

  /** The account's tiers, ascending milestone. */
  async list(accountId: number): Promise<VipTier[]> {
    return listTiers(this.db, accountId);
  }

  /**
   * The account's tiers, ascending milestone, read once per unit of work in its transaction: what
   * the customers a work shows in its events are told of (their next tier). A work that changes
   * tiers reads them itself, after the change.
   */
  tiersIn(w: Work, accountId: number): Promise<VipTier[]> {
    return this.tiersOfWork.get(w, accountId, () => listTiers(w.trx, accountId));
  }

  /**
   * Places one customer in the tier their points earned give them, in the work's transaction
   * (after a credit, or as a new customer): the move when it changed their tier (its change row
   * written), undefined otherwise (then nothing more than the one UPDATE). The caller records the
   * move's event with `announce`, after the events of the change that caused it.
   */
  async place(w: Work, customer: PlacedCustomer): Promise<TierMove | undefined> {
    const moved = await assignCustomerTier(w.trx, customer.id, w.now);
    if (!moved) return undefined;
    const stored = await insertTierChange(w.trx, {
      accountId: customer.accountId,
      customerId: customer.id,
      previousTierId: customer.vipTierId,
      currentTierId: moved.vipTierId,
      now: w.now,
    });
    const tiers = await this.tiersIn(w, customer.accountId);
    return { vipTierId: moved.vipTierId, change: toVipTierChange(stored, tiers) };
  }

  /** Records `customer.vip_tier_changed` for a move `place` made. */
  announce(w: Work, accountId: number, move: TierMove): void {
    this.events.record(w, accountId, 'customer.vip_tier_changed', { vip_tier_change: move.change });
  }

  /** Creates a tier and places the account's customers again. */
  async create(accountId: number, input: unknown): Promise<VipTier> {
    const tier = validate(VipTierInput, input, 'vip_tier');
    await this.accounts.require(accountId);
    return this.uow.run(async (w) => {
      await lockAccountTiers(w.trx, accountId);
      const created = await insertTier(w.trx, accountId, tier, w.now);
      if (!created) throw milestoneTaken(tier.milestone);
      await this.placeAll(w, accountId);
      return created;
    });
  }

  /** Changes the fields given and places the account's customers again; `404` for an unknown id. */
  async update(id: number, input: unknown): Promise<VipTier> {
    const change = validate(VipTierPatch, input, 'vip_tier');
    return this.uow.run(async (w) => {
      const existing = await this.require(w, id);
      const updated = await updateTier(w.trx, id, change, w.now);
      if (updated === 'milestone_taken') throw milestoneTaken(change.milestone ?? 0);
      if (!updated) throw notFound(`VIP tier ${id} does not exist`);
      await this.placeAll(w, existing.accountId);
      return updated;
    });
  }

  /** Deletes a tier; its customers move to the tier their points earned give them. */
  async delete(id: number): Promise<{ deleted: true }> {
    await this.uow.run(async (w) => {
      const existing = await this.require(w, id);
      // Moved out before the tier goes: its row names their previous tier in the changes, and the
      // foreign key's ON DELETE SET NULL would otherwise move them to no tier unseen.
      await this.placeAll(w, existing.accountId, id);
      await deleteTier(w.trx, id);
    });
    return { deleted: true };
  }

  /**
   * Places every customer of the account again (but in `excluded`), set-based: the change rows of
   * those who move (one INSERT … SELECT), then their update (one UPDATE), then one event each, in
   * ascending change id. Nothing more when no one moves.
   */
  private async placeAll(w: Work, accountId: number, excluded: number | null = null): Promise<void> {
    const changes = await insertAccountTierChanges(w.trx, accountId, w.now, excluded);
    if (changes.length === 0) return;
    await assignAccountTiers(w.trx, accountId, w.now, excluded);
    const tiers = await listTiers(w.trx, accountId);
    for (const change of changes) {
      this.events.record(w, accountId, 'customer.vip_tier_changed', {
        vip_tier_change: toVipTierChange(change, tiers),
      });
    }
  }

  /** The tier, with its account's tiers locked for this transaction; `404` for an unknown id. */
  private async require(w: Work, id: number) {
    const tier = await findTier(w.trx, id);
    if (!tier) throw notFound(`VIP tier ${id} does not exist`);
    await lockAccountTiers(w.trx, tier.accountId);
    return tier;
  }
}

/** The API form of a change: its tiers named from `tiers` (the account's, which hold both). */
function toVipTierChange(change: StoredTierChange, tiers: readonly VipTier[]): VipTierChange {
  const previous = tiers.find((tier) => tier.id === change.previousTierId);
  const current = tiers.find((tier) => tier.id === change.currentTierId);
  return {
    id: change.id,
    customer_id: change.customerId,
    previous_vip_tier: summary(change.previousTierId, previous),
    current_vip_tier: summary(change.currentTierId, current),
    description: describe(previous, current),
    created_at: isoTime(change.createdAt),
    updated_at: isoTime(change.createdAt),
  };
}

function summary(id: number | null, tier: VipTier | undefined): VipTierSummary | null {
  if (id === null) return null;
  // A tier deleted by a concurrent transaction since: its id is all that is left of it.
  return { id, name: tier?.name ?? '', image_url: tier?.image_url ?? '' };
}

/** "Achieved Gold" (up, or into a first tier), "Moved to Silver" (down), "Left Silver" (out of every tier). */
function describe(previous: VipTier | undefined, current: VipTier | undefined): string {
  if (!current) return `Left ${previous?.name ?? 'VIP tier'}`;
  if (!previous || current.milestone > previous.milestone) return `Achieved ${current.name}`;
  return `Moved to ${current.name}`;
}
