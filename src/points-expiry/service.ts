import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { balanceExpiresAt, type CustomersService, type LockedCustomer } from '../customers/service.js';
import type { EventsService } from '../events/service.js';
import type { JobHandler } from '../jobs/service.js';
import type { PointsSettingsService } from '../points-settings/service.js';
import type { PointsTransactionsService } from '../points-transactions/service.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { DAY_MS } from '../time.js';
import { findIdleCustomers, type IdleCustomer, markReminded } from './repository.js';

/** The reminder goes this long before a balance expires. */
export const REMINDER_BEFORE_MS = 14 * DAY_MS;
/** How often the expiring job runs. */
export const POINTS_EXPIRY_INTERVAL_MS = 15 * 60 * 1000;
/** The job runner's queue (and recurring job) of points expiry. */
export const POINTS_EXPIRY_QUEUE = 'points_expiry';
/** How long one run of the job works before it lets the runner schedule the rest (its lease is 30 s or more). */
const PASS_BUDGET_MS = 10_000;
/** Customers read per statement while looking for idle ones. */
const READ_BATCH = 1000;
/** Customers expired or reminded per transaction: short ones, that never hold the API back for long. */
const WRITE_BATCH = 100;

/** What one pass did. */
export interface ExpiryPass {
  expired: number;
  reminded: number;
}

/**
 * Points expiry (engine-contract.md): in an account whose points settings set `points_expiry`, a
 * member's whole balance expires when that many days pass without a points transaction or an
 * activity of theirs: one points transaction of minus the balance, described `Points expired`.
 * 14 days before, `customer.points_expiring` is recorded, once per date it expires. A recurring job
 * does both, on whichever process claims it; each customer is checked again under their lock in
 * the transaction that expires them, so a customer active meanwhile, or expired by another pass,
 * is left alone, and a purchase racing the expiry is served by the ledger's own rules.
 */
export class PointsExpiryService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly pointsSettings: PointsSettingsService,
    private readonly customers: CustomersService,
    private readonly ledger: PointsTransactionsService,
    private readonly events: EventsService,
  ) {}

  /**
   * The recurring job: a pass, then the next one POINTS_EXPIRY_INTERVAL_MS later; a pass that ran
   * out of its time (PASS_BUDGET_MS, well within the job's lease) goes on at once, as a new run.
   */
  job(): JobHandler {
    return {
      queue: POINTS_EXPIRY_QUEUE,
      schedule: { key: POINTS_EXPIRY_QUEUE },
      run: async () => {
        const { finished } = await this.runPass(performance.now() + PASS_BUDGET_MS);
        return { runAt: this.clock.now() + (finished ? POINTS_EXPIRY_INTERVAL_MS : 0) };
      },
    };
  }

  /** Expires every balance due now and reminds every customer 14 days from it, in every account that has expiry. */
  async runOnce(): Promise<ExpiryPass> {
    return (await this.runPass(Number.POSITIVE_INFINITY)).pass;
  }

  /**
   * A pass over every account that has expiry, until done or `until` (performance.now()) passes:
   * a pass cut short starts again from the first account (what it did no longer matches).
   */
  private async runPass(until: number): Promise<{ pass: ExpiryPass; finished: boolean }> {
    const pass: ExpiryPass = { expired: 0, reminded: 0 };
    for (const { accountId, inactivityDays } of await this.pointsSettings.expiringAccounts()) {
      const finished = await this.runAccount(accountId, inactivityDays * DAY_MS, pass, until);
      if (!finished) return { pass, finished: false };
    }
    return { pass, finished: true };
  }

  /**
   * One account's part of a pass: its idle customers read in id order, then expired or reminded in
   * short transactions, each of which reads the setting again (a merchant may change it meanwhile).
   * Answers whether it got through them before `until`.
   */
  private async runAccount(accountId: number, lifetimeMs: number, pass: ExpiryPass, until: number): Promise<boolean> {
    let after = 0;
    for (;;) {
      if (performance.now() > until) return false;
      const now = this.clock.now();
      const idle = await findIdleCustomers(
        this.db,
        accountId,
        now - (lifetimeMs - REMINDER_BEFORE_MS),
        after,
        READ_BATCH,
      );
      if (idle.length === 0) return true;
      after = idle[idle.length - 1]!.id;
      const due = idle.filter((c) => c.lastActiveAt + lifetimeMs <= now);
      const remind = idle.filter(
        (c) => c.lastActiveAt + lifetimeMs > now && c.remindedFor !== c.lastActiveAt + lifetimeMs,
      );
      for (let i = 0; i < due.length; i += WRITE_BATCH) {
        const batch = due.slice(i, i + WRITE_BATCH);
        pass.expired += await this.uow.run((w) => this.expire(w, accountId, batch));
      }
      for (let i = 0; i < remind.length; i += WRITE_BATCH) {
        const batch = remind.slice(i, i + WRITE_BATCH);
        pass.reminded += await this.uow.run((w) => this.remind(w, accountId, batch));
      }
    }
  }

  /** The account's balance lifetime as the work's transaction reads it; null when expiry was turned off. */
  private async lifetimeIn(w: Work, accountId: number): Promise<number | null> {
    const days = await this.pointsSettings.expiryIn(w, accountId);
    return days === null ? null : days * DAY_MS;
  }

  /** Expires the balances of the batch still due under their customers' locks; answers how many. */
  private async expire(w: Work, accountId: number, batch: readonly IdleCustomer[]) {
    const lifetimeMs = await this.lifetimeIn(w, accountId);
    if (lifetimeMs === null) return 0;
    let expired = 0;
    for (const { id } of batch) {
      const customer = await this.customers.lock(w, accountId, id);
      if (!customer || !expiredAt(customer, lifetimeMs, w.now)) continue;
      await this.ledger.post(w, customer, {
        pointsChange: -customer.pointsBalance,
        description: 'Points expired',
        internalNote: null,
      });
      expired++;
    }
    return expired;
  }

  /** Records the reminders of the batch still due under their customers' locks; answers how many. */
  private async remind(w: Work, accountId: number, batch: readonly IdleCustomer[]) {
    const lifetimeMs = await this.lifetimeIn(w, accountId);
    if (lifetimeMs === null) return 0;
    let reminded = 0;
    for (const { id } of batch) {
      const customer = await this.customers.lock(w, accountId, id);
      if (!customer || !reminderDue(customer, lifetimeMs, w.now)) continue;
      await markReminded(w.trx, id, balanceExpiresAt(customer, lifetimeMs)!);
      this.events.record(w, accountId, 'customer.points_expiring', {
        customer: await this.customers.shownIn(w, customer),
      });
      reminded++;
    }
    return reminded;
  }
}

/** Whether the locked customer's balance is due to expire at `now` (see balanceExpiresAt). */
function expiredAt(customer: LockedCustomer, lifetimeMs: number, now: number): boolean {
  const at = balanceExpiresAt(customer, lifetimeMs);
  return at !== null && at <= now;
}

/** Whether the locked customer is due their reminder at `now`: their balance expires within 14 days, and they were not reminded of that date yet. */
function reminderDue(customer: LockedCustomer, lifetimeMs: number, now: number): boolean {
  const at = balanceExpiresAt(customer, lifetimeMs);
  return at !== null && at > now && at - REMINDER_BEFORE_MS <= now && customer.expiryRemindedFor !== at;
}
