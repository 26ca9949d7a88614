import { type Kysely, sql } from 'kysely';
import type { Clock } from '../clock.js';
import { JOBS_CHANNEL } from '../storage/change-feed.js';
import type { Db } from '../storage/db.js';
import type { Database, JobRow } from '../storage/schema.js';
import type { Work } from '../storage/unit-of-work.js';
import {
  deleteGroup,
  findJobByKey,
  findQueueBacklog,
  findRecurringJobs,
  insertJobOnce,
  insertJobs,
  makeRecurringDue,
  moveGroup,
  PARKED_AT,
} from './repository.js';

export { PARKED_AT } from './repository.js';

/** A recurring job as the console shows it. */
export interface RecurringJob {
  key: string;
  queue: string;
  /** When it is due next; null while a process runs it. */
  nextRunAt: number | null;
  running: boolean;
  lastRunAt: number | null;
  lastDurationMs: number | null;
  lastFailed: boolean | null;
}

/** A job to add. */
export interface NewJob {
  readonly queue: string;
  readonly accountId?: number | null;
  /** Jobs of one group have at most a few in flight at once (one webhook endpoint's deliveries). */
  readonly groupKey?: string | null;
  /** What the job is about (a delivery: the event's id). */
  readonly subjectId?: number | null;
  readonly payload?: object;
  /** Due from this time; now when absent. */
  readonly runAt?: number;
}

/** A job claimed by this process: run it before its lease ends. */
export interface ClaimedJob {
  readonly id: number;
  readonly queue: string;
  readonly accountId: number | null;
  readonly groupKey: string | null;
  readonly subjectId: number | null;
  readonly payload: Record<string, unknown>;
  /** This attempt's number, from 1. */
  readonly attempt: number;
  readonly createdAt: number;
  /** When the lease ends: past it another process may claim the job again. */
  readonly leaseUntil: number;
  /** A recurring job (one row under its key): its runs are kept on its row (see JobsService.recurring). */
  readonly recurring: boolean;
}

/**
 * What became of a job: `done` deletes it, `runAt` makes it due again then. `record` runs in
 * the transaction that does so, only while this process still holds the job (its lease did not
 * run out): the delivery log's row of an attempt, for instance.
 */
export type JobOutcome =
  | { readonly done: true; readonly record?: (w: Work) => Promise<void> }
  | {
      readonly runAt: number;
      /** The claim was no attempt (a job put aside unrun, such as a parked delivery): it is not counted. */
      readonly undoAttempt?: boolean;
      readonly record?: (w: Work) => Promise<void>;
    };

/** The work of one queue. */
export interface JobHandler {
  readonly queue: string;
  /**
   * A recurring job: one row under this key, made when missing as a runner starts (due at once),
   * never deleted: each run says when the next is (`runAt`).
   */
  readonly schedule?: { readonly key: string };
  /** Runs one job, outside any transaction. A throw is a failed attempt, retried after a pause. */
  run(job: ClaimedJob): Promise<JobOutcome>;
}

/** Reads a claimed row. */
export function toClaimedJob(row: JobRow): ClaimedJob {
  let payload: Record<string, unknown> = {};
  try {
    payload = JSON.parse(row.payload) as Record<string, unknown>;
  } catch {
    // A payload is only ever written by this code as JSON; anything else is read as empty.
  }
  return {
    id: Number(row.id),
    queue: row.queue,
    accountId: row.account_id === null ? null : Number(row.account_id),
    groupKey: row.group_key,
    subjectId: row.subject_id === null ? null : Number(row.subject_id),
    payload,
    attempt: Number(row.attempts),
    createdAt: Number(row.created_at),
    leaseUntil: Number(row.run_at),
    recurring: row.unique_key !== null,
  };
}

/**
 * Jobs: work that runs later or on a schedule, kept in the database so that any process of any
 * node may run it (the JobRunner claims it with a lease). Services add jobs in the unit of work of
 * the change that causes them; the runner of this process is woken when it commits.
 */
export class JobsService {
  private readonly wakeListeners = new Set<(groups?: ReadonlySet<string | null>) => void>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /**
   * Adds jobs in the work's transaction; the runners are woken once it commits: this process's
   * own at once, and when this process runs none (the `loyalty` command), on PostgreSQL the
   * servers', by a NOTIFY sent in the same transaction (PostgreSQL delivers it at the commit; on
   * SQLite the servers see the file change).
   */
  async enqueue(w: Work, jobs: readonly NewJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await insertJobs(
      w.trx,
      jobs.map((job) => ({
        queue: job.queue,
        account_id: job.accountId ?? null,
        group_key: job.groupKey ?? null,
        subject_id: job.subjectId ?? null,
        payload: JSON.stringify(job.payload ?? {}),
        unique_key: null,
        run_at: job.runAt ?? w.now,
        created_at: w.now,
      })),
    );
    await this.announce(w, new Set(jobs.map((job) => job.groupKey ?? null)));
  }

  /** Wakes the runners once the work commits (see enqueue), telling this process's the groups of the new jobs. */
  private async announce(w: Work, groups?: ReadonlySet<string | null>): Promise<void> {
    if (this.wakeListeners.size > 0) w.afterCommit(() => this.wake(groups));
    else if (this.db.dialect === 'postgres')
      await sql`select pg_notify(${JOBS_CHANNEL}, current_schema())`.execute(w.trx);
  }

  /**
   * Adds the recurring job `key` of `queue` unless it exists, due at `runAt` (now when absent).
   * A read first: once it exists (every start but the first), nothing is written.
   */
  async ensureScheduled(queue: string, key: string, runAt: number = this.clock.now()): Promise<boolean> {
    if (await findJobByKey(this.kysely, key)) return false;
    return insertJobOnce(this.kysely, {
      queue,
      account_id: null,
      group_key: null,
      subject_id: null,
      payload: '{}',
      unique_key: key,
      run_at: runAt,
      created_at: this.clock.now(),
    });
  }

  /**
   * Makes the recurring job `key` due now, in the work's transaction, unless a process runs it
   * (its run then says when it is next due); the runners are woken once the work commits.
   */
  async dueNow(w: Work, key: string): Promise<void> {
    if ((await makeRecurringDue(w.trx, key, w.now)) > 0) await this.announce(w);
  }

  /** The recurring job `key`, if it exists (when it runs next, how many times it ran). */
  async scheduled(key: string): Promise<ClaimedJob | undefined> {
    const row = await findJobByKey(this.kysely, key);
    return row && toClaimedJob(row);
  }

  /** Every recurring job: when it runs next and how its last run went, whichever process ran it. */
  async recurring(): Promise<RecurringJob[]> {
    return (await findRecurringJobs(this.kysely)).map((row) => ({
      key: row.unique_key!,
      queue: row.queue,
      nextRunAt: row.lease_owner === null ? Number(row.run_at) : null,
      running: row.lease_owner !== null && Number(row.run_at) > this.clock.now(),
      lastRunAt: row.last_run_at === null ? null : Number(row.last_run_at),
      lastDurationMs: row.last_duration_ms === null ? null : Number(row.last_duration_ms),
      lastFailed: row.last_failed === null ? null : Number(row.last_failed) === 1,
    }));
  }

  /** Makes a group's waiting jobs due now (an endpoint enabled again); answers how many. */
  async resumeGroup(w: Work, groupKey: string): Promise<number> {
    const moved = await moveGroup(w.trx, groupKey, w.now);
    if (moved > 0) await this.announce(w);
    return moved;
  }

  /** Stops a group's waiting jobs until resumed (a disabled endpoint); answers how many. */
  parkGroup(w: Work, groupKey: string): Promise<number> {
    return moveGroup(w.trx, groupKey, PARKED_AT);
  }

  /** Deletes a group's jobs (a deleted endpoint's deliveries); answers how many. */
  dropGroup(w: Work, groupKey: string): Promise<number> {
    return deleteGroup(w.trx, groupKey);
  }

  /** How many jobs of `queue` wait (parked ones aside), and the age of the oldest, in ms. */
  async backlog(queue: string): Promise<{ pending: number; oldestAgeMs: number | null }> {
    const { pending, oldestCreatedAt } = await findQueueBacklog(this.kysely, queue);
    return { pending, oldestAgeMs: oldestCreatedAt === null ? null : Math.max(0, this.clock.now() - oldestCreatedAt) };
  }

  /**
   * Calls `listener` whenever this process commits new jobs, with their groups when known (null
   * for jobs of no group); returns how to stop.
   */
  onWake(listener: (groups?: ReadonlySet<string | null>) => void): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  /** Wakes this process's runner (jobs were committed, or made due: an endpoint enabled again). */
  wake(groups?: ReadonlySet<string | null>): void {
    for (const listener of this.wakeListeners) listener(groups);
  }

  private get kysely(): Kysely<Database> {
    return this.db.kysely;
  }
}
