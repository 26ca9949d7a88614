import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import { invalidParameter, notFound } from '../errors.js';
import type { EventsService } from '../events/service.js';
import type { JobHandler, JobsService } from '../jobs/service.js';
import { BatchPace } from '../storage/batch-pace.js';
import type { Database } from '../storage/schema.js';
import { OncePerWork, type UnitOfWork, type Work } from '../storage/unit-of-work.js';
import { DAY_MS } from '../time.js';
import { validate } from '../validate.js';
import {
  dayOf,
  earningsFrom,
  type PeriodProgramType,
  placeInPeriod,
  type StoredPlacement,
  tierFor,
  VIP_PROGRAM_TYPES,
  type VipProgramType,
} from './periods.js';
import {
  addEarnings,
  assignCustomersTiers,
  assignCustomerTier,
  countCustomersToPlace,
  deleteTier,
  findCustomerIds,
  findEarnings,
  findPeriodAccounts,
  findProgram,
  findTier,
  findTierMembers,
  insertTier,
  insertTierChange,
  insertTierChanges,
  type LockedPlacement,
  listTiers,
  lockAccountTiers,
  lockPlacements,
  lockTier,
  markPlaced,
  raiseProgramVersion,
  type StoredProgram,
  type StoredTierChange,
  storeAllTimePlacements,
  storePlacement,
  storePlacementVersion,
  updateProgramType,
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

/** What placing one customer wrote: the placement's columns, and the move when it changed their tier. */
export interface Placed {
  readonly fields: Partial<StoredPlacement>;
  readonly move?: TierMove;
}

/** The account's VIP program: its type and tiers (ascending milestone). */
export type VipProgram = StoredProgram;

/** The account's program as the console shows it: its type, and how many customers wait to be placed again. */
export interface VipProgramStatus {
  readonly type: VipProgramType;
  readonly customers: number;
  readonly waiting: number;
}

/** What placing an account's customers again did. */
export interface PlacementRun {
  readonly placed: number;
  readonly moved: number;
}

/** The job runner's queue (and recurring job) of the period programs. */
export const VIP_PERIODS_QUEUE = 'vip_periods';
/** The periods job runs at every UTC midnight, and this often between (customers left to place again). */
const VIP_PERIODS_INTERVAL_MS = 60 * 60 * 1000;
/** How long one run works before it lets the runner schedule the rest (its lease is 30 s or more). */
const PASS_BUDGET_MS = 10_000;
/** Customers read per statement while looking for those due. */
const READ_BATCH = 1000;
/** Customers placed per transaction at most; fewer when that takes longer than BATCH_MS (batch-pace.ts). */
const WRITE_BATCH = 200;

const NO_PROGRAM: StoredProgram = { type: 'all_time', version: 0, tiers: [], pointsExpiryDays: null };

/**
 * VIP tiers of an all-time program: a customer is in the tier with the highest milestone at or
 * below their points earned. A change to the tiers is committed first, then the account's
 * customers are placed again a batch per transaction, so that placing a million customers never
 * holds the account's writes back for long; the periods job finishes a placement whose process
 * died part-way. Every move writes a `vip_tier_changes` row and a `customer.vip_tier_changed` event
 * in the transaction that made it.
 */
export class VipTiersService {
  /** The account's program as each unit of work first read it (a work that credits reads it once). */
  private readonly programOfWork = new OncePerWork<number, VipProgram>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
    private readonly events: EventsService,
    private readonly jobs: JobsService,
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
  async tiersIn(w: Work, accountId: number): Promise<VipTier[]> {
    return (await this.programIn(w, accountId)).tiers;
  }

  /** The account's program (type and tiers), read once per unit of work in its transaction. */
  programIn(w: Work, accountId: number): Promise<VipProgram> {
    return this.programOfWork.get(w, accountId, async () => (await findProgram(w.trx, accountId)) ?? NO_PROGRAM);
  }

  /** The account's program (type and tiers). */
  async program(accountId: number): Promise<VipProgram> {
    return (await findProgram(this.db, accountId)) ?? NO_PROGRAM;
  }

  /**
   * Places one customer, in the work's transaction (after a credit, or as a new customer): in an
   * all-time program in the tier their points earned give them (one UPDATE, nothing more unless it
   * moved them); in a period program as its rules make of their earnings. Answers the columns it
   * wrote and the move when it changed their tier (its change row written). The caller records the
   * move's event with `announce`, after the events of the change that caused it.
   */
  async place(w: Work, customer: PlacedCustomer): Promise<Placed> {
    const program = await this.programIn(w, customer.accountId);
    if (program.type === 'all_time') {
      const moved = await assignCustomerTier(w.trx, customer.id, w.now);
      if (!moved) return { fields: {} };
      const move = await this.moveOf(w, customer, moved.vipTierId, program.tiers);
      return { fields: { vipTierId: moved.vipTierId }, move };
    }
    const earnings = await findEarnings(w.trx, [customer.id], earningsFrom(program.type, w.now));
    const placement = periodPlacement(program, program.type, w.now, earnings.get(customer.id) ?? []);
    await storePlacement(w.trx, customer.id, placement, null);
    if (placement.vipTierId === customer.vipTierId) return { fields: placement };
    return { fields: placement, move: await this.moveOf(w, customer, placement.vipTierId, program.tiers) };
  }

  /**
   * `place` for many customers at once (an import's batch), in a few statements whatever their
   * number: the moves, by customer id; the caller records their events.
   */
  async placeMany(w: Work, customers: readonly PlacedCustomer[]): Promise<Map<number, TierMove>> {
    const moves = new Map<number, TierMove>();
    const [first] = customers;
    if (!first) return moves;
    const program = await this.programIn(w, first.accountId);
    const moved: { customer: PlacedCustomer; vipTierId: number | null }[] = [];
    if (program.type === 'all_time') {
      const placed = await assignCustomersTiers(
        w.trx,
        customers.map((customer) => customer.id),
        w.now,
      );
      for (const customer of customers) {
        if (placed.has(customer.id)) moved.push({ customer, vipTierId: placed.get(customer.id)! });
      }
    } else {
      const ids = customers.map((customer) => customer.id);
      const earnings = await findEarnings(w.trx, ids, earningsFrom(program.type, w.now));
      for (const customer of customers) {
        const placement = periodPlacement(program, program.type, w.now, earnings.get(customer.id) ?? []);
        await storePlacement(w.trx, customer.id, placement, null);
        if (placement.vipTierId !== customer.vipTierId) moved.push({ customer, vipTierId: placement.vipTierId });
      }
    }
    const changes = await insertTierChanges(
      w.trx,
      moved.map(({ customer, vipTierId }) => ({
        accountId: customer.accountId,
        customerId: customer.id,
        previousTierId: customer.vipTierId,
        currentTierId: vipTierId,
        now: w.now,
      })),
    );
    for (const change of changes) {
      moves.set(change.customerId, {
        vipTierId: change.currentTierId,
        change: toVipTierChange(change, program.tiers),
      });
    }
    return moves;
  }

  /**
   * Counts points earned elsewhere (an import's, beyond the balances it brought) as earned today
   * in the customers' VIP progress; the caller added them to points_earned and places them.
   */
  async countEarnedElsewhere(w: Work, earnings: readonly { customerId: number; points: number }[]): Promise<void> {
    await addEarnings(w.trx, dayOf(w.now), earnings);
  }

  /** Writes the change row of a customer's move to `vipTierId`. */
  private async moveOf(
    w: Work,
    customer: PlacedCustomer,
    vipTierId: number | null,
    tiers: readonly VipTier[],
  ): Promise<TierMove> {
    const stored = await insertTierChange(w.trx, {
      accountId: customer.accountId,
      customerId: customer.id,
      previousTierId: customer.vipTierId,
      currentTierId: vipTierId,
      now: w.now,
    });
    return { vipTierId, change: toVipTierChange(stored, tiers) };
  }

  /** Records `customer.vip_tier_changed` for a move `place` made. */
  announce(w: Work, accountId: number, move: TierMove): void {
    this.events.record(w, accountId, 'customer.vip_tier_changed', { vip_tier_change: move.change });
  }

  /**
   * Creates a tier, then places the account's customers again, a batch per transaction;
   * `progress` hears after each batch.
   */
  async create(accountId: number, input: unknown, progress?: (run: PlacementRun) => void): Promise<VipTier> {
    const tier = validate(VipTierInput, input, 'vip_tier');
    await this.accounts.require(accountId);
    const created = await this.uow.run(async (w) => {
      await lockAccountTiers(w.trx, accountId);
      const inserted = await insertTier(w.trx, accountId, tier, w.now);
      if (!inserted) throw milestoneTaken(tier.milestone);
      await raiseProgramVersion(w.trx, accountId);
      return inserted;
    });
    await this.placeAgain(accountId, progress);
    return created;
  }

  /**
   * Changes the fields given; a new milestone then places the account's customers again, a batch
   * per transaction (`progress` hears after each). `404` for an unknown id.
   */
  async update(id: number, input: unknown, progress?: (run: PlacementRun) => void): Promise<VipTier> {
    const change = validate(VipTierPatch, input, 'vip_tier');
    const { updated, accountId, moves } = await this.uow.run(async (w) => {
      const existing = await this.require(w, id);
      const stored = await updateTier(w.trx, id, change, w.now);
      if (stored === 'milestone_taken') throw milestoneTaken(change.milestone ?? 0);
      if (!stored) throw notFound(`VIP tier ${id} does not exist`);
      const moved = stored.milestone !== existing.milestone;
      if (moved) await raiseProgramVersion(w.trx, existing.accountId);
      return { updated: stored, accountId: existing.accountId, moves: moved };
    });
    if (moves) await this.placeAgain(accountId, progress);
    return updated;
  }

  /**
   * Deletes a tier: its customers first move to the tier their points earned give them without
   * it, a batch per transaction (`progress` hears after each), then the tier goes, in the
   * transaction that finds it empty. `404` for an unknown id.
   */
  async delete(id: number, progress?: (run: PlacementRun) => void): Promise<{ deleted: true }> {
    const { accountId } = await this.uow.run((w) => this.require(w, id));
    const run = { placed: 0, moved: 0 };
    const pace = new BatchPace(WRITE_BATCH);
    for (;;) {
      const size = pace.next();
      // How many members this batch moved out: none once the tier is gone (deleted here when empty).
      const batch = await this.uow.run(async (w) => {
        await lockAccountTiers(w.trx, accountId);
        // Locked: a credit placing a customer in it meanwhile has committed, and is among the members.
        if (!(await lockTier(w.trx, id))) return 0;
        const members = await findTierMembers(w.trx, id, size);
        if (members.length === 0) {
          await deleteTier(w.trx, id);
          return 0;
        }
        // Moved out before the tier goes: its row names their previous tier in the changes, and the
        // foreign key's ON DELETE SET NULL would otherwise move them to no tier unseen.
        run.moved += await this.placeBatch(w, accountId, await findProgram(w.trx, accountId), members, id);
        run.placed += members.length;
        return members.length;
      });
      if (batch === 0) break;
      progress?.({ ...run });
      await pace.rest(batch);
    }
    return { deleted: true };
  }

  /** The account's program type, and how many of its customers wait to be placed for it. */
  async programStatus(accountId: number): Promise<VipProgramStatus> {
    await this.accounts.require(accountId);
    const program = await this.program(accountId);
    const { total, waiting } = await countCustomersToPlace(this.db, accountId, program.version);
    return { type: program.type, customers: total, waiting };
  }

  /**
   * Changes the account's program type (`all_time`, `calendar_year`, `rolling_12_months`). Its
   * customers are then placed again, a batch per transaction, by the periods job of any process
   * (woken at once), or by `placeAgain` (the CLI, which shows its progress). The type it already
   * has changes nothing.
   */
  async setProgramType(accountId: number, type: string): Promise<VipProgramStatus> {
    if (!(VIP_PROGRAM_TYPES as readonly string[]).includes(type)) {
      throw invalidParameter('vip_program.type', `must be one of ${VIP_PROGRAM_TYPES.join(', ')}`);
    }
    await this.accounts.require(accountId);
    await this.uow.run(async (w) => {
      await lockAccountTiers(w.trx, accountId);
      const version = await updateProgramType(w.trx, accountId, type as VipProgramType);
      if (version !== undefined) await this.jobs.dueNow(w, VIP_PERIODS_QUEUE);
    });
    return this.programStatus(accountId);
  }

  /**
   * Places again every customer of the account whose placement is due (made for another program
   * type, or changed by time), a batch per transaction; `progress` hears after each batch.
   */
  async placeAgain(accountId: number, progress?: (run: PlacementRun) => void): Promise<PlacementRun> {
    const run = { placed: 0, moved: 0 };
    await this.placeDue(accountId, run, Number.POSITIVE_INFINITY, progress);
    return run;
  }

  /**
   * The recurring job of the period programs: at every UTC midnight (a year's end, points leaving a
   * rolling window) and every hour between, it places again every customer whose placement is due;
   * a pass that ran out of its time goes on at once, as a new run.
   */
  job(): JobHandler {
    return {
      queue: VIP_PERIODS_QUEUE,
      schedule: { key: VIP_PERIODS_QUEUE },
      run: async () => {
        const finished = await this.runPass(performance.now() + PASS_BUDGET_MS);
        const now = this.clock.now();
        const midnight = (Math.floor(now / DAY_MS) + 1) * DAY_MS;
        return { runAt: finished ? Math.min(midnight, now + VIP_PERIODS_INTERVAL_MS) : now };
      },
    };
  }

  /** Places every due customer of every account that has any, until done or `until` (performance.now()). */
  async runPass(until = Number.POSITIVE_INFINITY): Promise<boolean> {
    for (const { accountId } of await findPeriodAccounts(this.db)) {
      if (!(await this.placeDue(accountId, { placed: 0, moved: 0 }, until))) return false;
    }
    return true;
  }

  /** One account's due customers, read in id order, placed in short transactions; whether it got through them. */
  private async placeDue(
    accountId: number,
    run: { placed: number; moved: number },
    until: number,
    progress?: (run: PlacementRun) => void,
  ): Promise<boolean> {
    let after = 0;
    const pace = new BatchPace(WRITE_BATCH);
    for (;;) {
      if (performance.now() > until) return false;
      const { version } = await this.program(accountId);
      const due = await findCustomerIds(this.db, accountId, after, READ_BATCH, { version, now: this.clock.now() });
      if (due.length === 0) {
        await this.uow.run((w) => markPlaced(w.trx, accountId, version));
        return true;
      }
      after = due[due.length - 1]!;
      for (let i = 0; i < due.length; ) {
        if (performance.now() > until) return false;
        const batch = due.slice(i, i + pace.next());
        i += batch.length;
        run.moved += await this.uow.run(async (w) => {
          await lockAccountTiers(w.trx, accountId);
          return this.placeBatch(w, accountId, await findProgram(w.trx, accountId), batch);
        });
        run.placed += batch.length;
        progress?.({ ...run });
        await pace.rest(batch.length);
      }
    }
  }

  /**
   * Places these customers of the account under their locks, as `program` says (`excluded`: a tier
   * about to be deleted, which places no one), writing only those whose placement changed, with a
   * change row and an event for each move; answers how many moved.
   */
  private async placeBatch(
    w: Work,
    accountId: number,
    program: StoredProgram | undefined,
    ids: readonly number[],
    excluded: number | null = null,
  ): Promise<number> {
    if (!program) return 0;
    const tiers = program.tiers.filter((tier) => tier.id !== excluded);
    const rows = await lockPlacements(w.trx, accountId, ids);
    if (program.type === 'all_time') return this.placeAllTime(w, accountId, program, tiers, rows);
    const earnings = await findEarnings(
      w.trx,
      rows.map((row) => row.id),
      earningsFrom(program.type, w.now),
    );
    let moved = 0;
    for (const row of rows) {
      const placement = periodPlacement({ ...program, tiers }, program.type, w.now, earnings.get(row.id) ?? []);
      if (samePlacement(placement, row)) continue;
      await storePlacement(w.trx, row.id, placement, w.now);
      if (placement.vipTierId === row.vipTierId) continue;
      const { change } = await this.moveOf(w, { ...row, accountId }, placement.vipTierId, program.tiers);
      this.events.record(w, accountId, 'customer.vip_tier_changed', { vip_tier_change: change });
      moved++;
    }
    return moved;
  }

  /**
   * `placeBatch` for an all-time program, set-based: the change rows of those who move (one
   * INSERT), one UPDATE per tier they land in, one UPDATE of the version alone for those whose
   * placement does not change (their updated_at stays), then one event per move in change order.
   */
  private async placeAllTime(
    w: Work,
    accountId: number,
    program: StoredProgram,
    tiers: readonly VipTier[],
    rows: readonly LockedPlacement[],
  ): Promise<number> {
    const landing = new Map<number | null, number[]>();
    const versionOnly: number[] = [];
    const moving: { customerId: number; previousTierId: number | null; currentTierId: number | null }[] = [];
    for (const row of rows) {
      const placement = allTimePlacement(tiers, row.pointsEarned, program.version);
      if (samePlacement(placement, row)) continue;
      if (samePlacement(placement, { ...row, vipProgramVersion: program.version })) {
        versionOnly.push(row.id);
        continue;
      }
      const ids = landing.get(placement.vipTierId) ?? [];
      if (ids.length === 0) landing.set(placement.vipTierId, ids);
      ids.push(row.id);
      if (placement.vipTierId !== row.vipTierId) {
        moving.push({ customerId: row.id, previousTierId: row.vipTierId, currentTierId: placement.vipTierId });
      }
    }
    const changes = await insertTierChanges(
      w.trx,
      moving.map((move) => ({ ...move, accountId, now: w.now })),
    );
    for (const [vipTierId, ids] of landing) {
      await storeAllTimePlacements(w.trx, ids, { vipTierId, version: program.version }, w.now);
    }
    await storePlacementVersion(w.trx, versionOnly, program.version);
    for (const change of changes) {
      this.events.record(w, accountId, 'customer.vip_tier_changed', {
        vip_tier_change: toVipTierChange(change, program.tiers),
      });
    }
    return changes.length;
  }

  /** The tier, with its account's tiers locked for this transaction; `404` for an unknown id. */
  private async require(w: Work, id: number) {
    const tier = await findTier(w.trx, id);
    if (!tier) throw notFound(`VIP tier ${id} does not exist`);
    await lockAccountTiers(w.trx, tier.accountId);
    return tier;
  }
}

/** A placement by a period program's rules, as stored. */
function periodPlacement(
  program: StoredProgram,
  type: PeriodProgramType,
  now: number,
  earnings: Parameters<typeof placeInPeriod>[2],
): StoredPlacement {
  const placement = placeInPeriod(type, now, earnings, program.tiers);
  return {
    vipTierId: placement.vipTierId,
    vipProgress: placement.progress,
    vipTierExpiresAt: placement.tierExpiresAt,
    vipPeriodEnd: placement.periodEnd,
    vipRetainDelta: placement.retainDelta,
    vipRecheckAt: placement.recheckAt,
    vipProgramVersion: program.version,
  };
}

/** A placement in an all-time program, as stored: the tier points earned reach, no period. */
function allTimePlacement(tiers: readonly VipTier[], pointsEarned: number, version: number): StoredPlacement {
  return {
    vipTierId: tierFor(tiers, pointsEarned)?.id ?? null,
    vipProgress: 0,
    vipTierExpiresAt: null,
    vipPeriodEnd: null,
    vipRetainDelta: null,
    vipRecheckAt: null,
    vipProgramVersion: version,
  };
}

function samePlacement(a: StoredPlacement, b: StoredPlacement): boolean {
  return (
    a.vipTierId === b.vipTierId &&
    a.vipProgress === b.vipProgress &&
    a.vipTierExpiresAt === b.vipTierExpiresAt &&
    a.vipPeriodEnd === b.vipPeriodEnd &&
    a.vipRetainDelta === b.vipRetainDelta &&
    a.vipRecheckAt === b.vipRecheckAt &&
    a.vipProgramVersion === b.vipProgramVersion
  );
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
