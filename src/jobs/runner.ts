import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db } from '../storage/db.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import {
  claimGroupJobs,
  claimJobs,
  countGroupLeasesOfOthers,
  deleteClaimedJobs,
  findClaimable,
  findNextDue,
  type RecurringRun,
  rescheduleClaimedJob,
} from './repository.js';
import { type ClaimedJob, type JobHandler, type JobOutcome, type JobsService, toClaimedJob } from './service.js';

export interface JobRunnerOptions {
  /** Jobs this process runs at once. */
  maxInFlight?: number;
  /** Jobs of one group (one webhook endpoint) in flight at once, across every process. */
  perGroup?: number;
  /** How long a claim lasts: longer than any run takes, so that no job is ever run twice at once. */
  leaseMs?: number;
  /** The safety net: with nothing due and no wake-up, the runner looks again after this long. */
  pollMs?: number;
  /** On SQLite, how often the file is checked for commits made by other processes (no table is read). */
  watchMs?: number;
  /** How long stop() waits for the jobs under way. */
  stopTimeoutMs?: number;
  /**
   * The least time between two claims: wake-ups within it are served by one claim at its end, so
   * that under load (a wake-up per commit) jobs are claimed in batches, not one transaction each.
   */
  claimGapMs?: number;
  /**
   * Whether the transaction recording finished jobs also claims their groups' next due jobs (see
   * handOn), so that a busy group (an endpoint with a backlog) keeps its places full without a
   * look over the whole queue per job. True when absent; false makes each finished job look again.
   */
  handOn?: boolean;
  /**
   * This process is the only one claiming from the database (one process on a SQLite file): with
   * handOn it claims ahead while a group's jobs are quick (see depth) and takes every place of a
   * group, since nobody else would. Otherwise it leaves room for the other processes (see
   * handOnTarget). False when absent.
   */
  alone?: boolean;
  /** The least time between two transactions recording outcomes (see finish); 50 ms alone, else 0. */
  finishGapMs?: number;
}

/** What a queue's runs came to, for the metrics and the console. */
export interface QueueStats {
  runs: number;
  failures: number;
  lastRunAt: number | null;
  lastDurationMs: number | null;
  lastOutcome: 'done' | 'again' | 'failed' | null;
}

/** An outcome waiting to be recorded; resolved with whether it was recorded with its batch. */
interface Finishing {
  job: ClaimedJob;
  outcome: JobOutcome;
  /** A job given back unrun (its group is slow): its place is not handed on. */
  putBack: boolean;
  /** A recurring job's run, kept on its row. */
  run: RecurringRun | undefined;
  resolve: (settled: boolean) => void;
  reject: (error: unknown) => void;
}

/** A group's jobs in this process: running, and claimed but waiting for a place. */
interface GroupState {
  running: number;
  queued: ClaimedJob[];
  /** Jobs whose outcome waits to be recorded. */
  recording: number;
  /** How long its jobs run, on average lately (ms); null before the first ends. */
  averageMs: number | null;
}

const DEFAULTS = {
  maxInFlight: 256,
  perGroup: 10,
  leaseMs: 30_000,
  pollMs: 30_000,
  watchMs: 200,
  stopTimeoutMs: 5000,
  claimGapMs: 10,
};

/** The least time between two looks for the next due job (a read), outside the poll. */
const NEXT_DUE_CHECK_MS = 1000;

/** A recurring job made at start runs first this long after (see prepare). */
const FIRST_RUN_AFTER_MS = 60_000;

/**
 * Alone, the least time between two transactions recording outcomes (see finish): each takes the
 * SQLite file's one write lock from the requests, and the jobs claimed ahead run on meanwhile.
 */
const ALONE_FINISH_GAP_MS = 50;

/** A quick group's work claimed ahead of its places, in time (see depth)… */
const PREFETCH_MS = 2000;
/** …and in multiples of its places. */
const PREFETCH_PLACES = 30;

/** Rows looked at per claim, however long the backlog (see findClaimable). */
const CLAIM_SCAN = 1000;

/**
 * Runs the jobs of the database (JobsService), in every server process at once: each claim takes
 * due jobs with a lease (PostgreSQL `FOR UPDATE SKIP LOCKED`; on SQLite the claim is a write
 * transaction, which the file lets one process make at a time), so no job is run by two
 * processes at once, and a crashed process's jobs are due again when their lease ends.
 *
 * It claims when woken, never on a tight poll: by this process's commits of new jobs (the unit of
 * work's commit hook), on PostgreSQL by NOTIFY from processes that run no runner (the CLI), on
 * SQLite when the file's `data_version` moved (another process committed), at the time the next
 * job is due, and, as the net, every `pollMs`. With nothing to do it touches the database once per
 * `pollMs`.
 */
export class JobRunner {
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly stats = new Map<string, QueueStats>();
  /** Reads for due jobs so far (an idle runner makes one per poll). */
  looks = 0;
  /** Claim transactions so far (one per look that found due jobs). */
  claims = 0;
  private readonly handlers: Map<string, JobHandler>;
  private readonly queues: string[];
  private readonly options: Required<JobRunnerOptions>;
  private inFlight = 0;
  /** Jobs begun so far. */
  private begun = 0;
  /** This process's jobs of each group that has some. */
  private readonly groups = new Map<string, GroupState>();
  private finishScheduled = false;
  private finishingNow = false;
  private lastFinishAt = Number.NEGATIVE_INFINITY;
  private readonly running = new Set<Promise<void>>();
  private claiming: Promise<void> | null = null;
  private again = false;
  /** The last claim filled every free place: a finished job should claim again. */
  private starved = false;
  private timer: NodeJS.Timeout | null = null;
  /** A kick that came within claimGapMs of the last claim, waiting for the gap's end. */
  private deferred: NodeJS.Timeout | null = null;
  private lastClaimAt = Number.NEGATIVE_INFINITY;
  private lastNextDueAt = Number.NEGATIVE_INFINITY;
  private timerAt = Number.POSITIVE_INFINITY;
  private watch: NodeJS.Timeout | null = null;
  private readonly unsubscribe: (() => void)[] = [];
  /** Outcomes waiting to be recorded together (see finish). */
  private readonly finishing: Finishing[] = [];
  private stopped = true;
  /** The recurring jobs' rows exist (made by the first claim; see start). */
  private scheduled = false;

  constructor(
    private readonly db: Db,
    private readonly uow: UnitOfWork,
    private readonly jobs: JobsService,
    private readonly clock: Clock,
    handlers: readonly JobHandler[],
    private readonly log: FastifyBaseLogger,
    options: JobRunnerOptions = {},
  ) {
    this.handlers = new Map(handlers.map((handler) => [handler.queue, handler]));
    this.queues = [...this.handlers.keys()];
    const alone = options.alone ?? false;
    this.options = {
      ...DEFAULTS,
      handOn: true,
      finishGapMs: alone ? ALONE_FINISH_GAP_MS : 0,
      ...options,
      alone,
    };
    for (const queue of this.queues) {
      this.stats.set(queue, { runs: 0, failures: 0, lastRunAt: null, lastDurationMs: null, lastOutcome: null });
    }
  }

  /**
   * Starts listening for wake-ups and claims what is due, making the recurring jobs that are
   * missing first. Never fails: a database that is away or locked is tried again, as every claim is.
   */
  start(): void {
    this.stopped = false;
    this.unsubscribe.push(
      this.jobs.onWake((groups) => {
        // New jobs only of groups this process is busy with: they are claimed as its jobs of
        // those groups end (see handOn, or the look each one makes), and a look now would only
        // walk past them.
        if (groups && [...groups].every((group) => group !== null && this.busy(group))) return;
        this.kick();
      }),
    );
    const feed = this.db.changes;
    if (feed && 'onJobs' in feed && typeof feed.onJobs === 'function') {
      this.unsubscribe.push((feed.onJobs as (listener: () => void) => () => void)(() => this.kick()));
      void feed.isLive();
    }
    if (this.db.sqlite) this.watchFile(this.db.sqlite.writer.prepare<[], number>('PRAGMA data_version').pluck());
    this.kick();
  }

  /**
   * Claims what is due now. Wake-ups coalesce: one during a claim makes another claim after it,
   * and claims are at least claimGapMs apart (a wake-up in the gap waits for its end).
   */
  kick(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    const wait = this.lastClaimAt + this.options.claimGapMs - performance.now();
    if (wait > 0) {
      this.deferred ??= setTimeout(() => {
        this.deferred = null;
        this.kick();
      }, wait).unref();
      return;
    }
    this.again = false;
    this.claiming = this.claimOnce().finally(() => {
      this.claiming = null;
      if (this.again) this.kick();
    });
  }

  /**
   * Runs every job due now and waits for them (and for what they make due at once): for tests and
   * the CLI, which move the clock or need the work done before they go on. Answers how many ran.
   */
  async runDue(): Promise<number> {
    const before = this.begun;
    for (;;) {
      const claimed = await this.claim(this.options.maxInFlight);
      if (claimed.length === 0 && this.running.size === 0) return this.begun - before;
      for (const row of claimed) this.begin(row);
      await Promise.allSettled([...this.running]);
    }
  }

  /** Stops claiming, waits (up to stopTimeoutMs) for the jobs under way; the rest are due again when their lease ends. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.deferred) clearTimeout(this.deferred);
    if (this.watch) clearInterval(this.watch);
    for (const stop of this.unsubscribe.splice(0)) stop();
    await this.claiming;
    // Jobs claimed ahead go back at once, for the other processes to claim.
    const givenBack = [...this.groups.values()].flatMap((state) =>
      state.queued.splice(0).map((job) => this.putBack(job)),
    );
    const timeout = new Promise((resolve) => setTimeout(resolve, this.options.stopTimeoutMs).unref());
    await Promise.race([Promise.allSettled([...this.running, ...givenBack]), timeout]);
  }

  /**
   * One claim for the free places. When it fills them all there may be more: a finished job claims
   * again. Otherwise, at most once a second, it reads when the next job is due and sets the timer
   * (retries this process scheduled set it themselves).
   */
  private async claimOnce(): Promise<void> {
    try {
      const room = this.options.maxInFlight - this.inFlight;
      if (room <= 0) {
        this.starved = true;
        return;
      }
      this.lastClaimAt = performance.now();
      if (!this.scheduled && !(await this.prepare())) throw new Error('the recurring jobs are not written yet');
      const claimed = await this.claim(room);
      for (const row of claimed) this.begin(row);
      this.starved = claimed.length === room;
      if (this.starved || this.stopped) return;
      if (performance.now() - this.lastNextDueAt >= NEXT_DUE_CHECK_MS) {
        this.lastNextDueAt = performance.now();
        this.armAt((await findNextDue(this.db.kysely, this.queues, this.clock.now())) ?? Number.POSITIVE_INFINITY);
      } else {
        // Keep the poll's net set.
        this.armAt(Number.POSITIVE_INFINITY);
      }
    } catch (error) {
      this.log.warn({ err: error }, 'claiming jobs failed; trying again at the next wake-up or poll');
      this.armAt(this.clock.now() + 1000);
    }
  }

  /**
   * A read finds the due jobs; only when there are some does a write transaction claim them (those
   * still due: another process may have taken some meanwhile). A look that finds nothing writes
   * nothing, so it never waits for, nor holds, SQLite's write lock.
   */
  private async claim(limit: number): Promise<ClaimedJob[]> {
    if (this.queues.length === 0) return [];
    this.looks++;
    const ids = await findClaimable(this.db.kysely, {
      queues: this.queues,
      now: this.clock.now(),
      limit,
      perGroup: this.options.perGroup,
      scan: CLAIM_SCAN,
    });
    if (ids.length === 0) return [];
    this.claims++;
    return this.uow.run(async (w) => {
      const rows = await claimJobs(w.trx, ids, {
        owner: this.owner,
        now: w.now,
        leaseUntil: w.now + this.options.leaseMs,
      });
      return rows.map(toClaimedJob);
    });
  }

  /**
   * Makes the recurring jobs that are missing (each first due a minute from now, so that a
   * starting process writes nothing more); answers false when the database could not be written
   * just then (the first claim tries again).
   */
  async prepare(): Promise<boolean> {
    try {
      for (const handler of this.handlers.values()) {
        if (handler.schedule) {
          await this.jobs.ensureScheduled(handler.queue, handler.schedule.key, this.clock.now() + FIRST_RUN_AFTER_MS);
        }
      }
      this.scheduled = true;
    } catch (error) {
      this.log.warn({ err: error }, 'the recurring jobs could not be written yet; the runner tries again');
    }
    return this.scheduled;
  }

  /** A group's state in this process, made when first needed. */
  private group(key: string): GroupState {
    let state = this.groups.get(key);
    if (!state) {
      state = { running: 0, queued: [], recording: 0, averageMs: null };
      this.groups.set(key, state);
    }
    return state;
  }

  /** Whether this process has jobs of the group running, waiting for a place or for their outcome's record. */
  private busy(key: string): boolean {
    const state = this.groups.get(key);
    return state !== undefined && state.running + state.queued.length + state.recording > 0;
  }

  /** Starts a claimed job, or keeps it for when a place of its group frees (see handOn). */
  private begin(job: ClaimedJob): void {
    if (job.groupKey !== null) {
      const state = this.group(job.groupKey);
      if (state.running >= this.options.perGroup) {
        state.queued.push(job);
        return;
      }
      state.running++;
    }
    this.begun++;
    this.inFlight++;
    const run = this.execute(job).then((settled) => {
      this.inFlight--;
      this.running.delete(run);
      // A finished job frees a place: in the runner when the last claim filled them all; and
      // unless its place was handed on as it was recorded (see handOn), a look finds what is due.
      if (this.starved || !settled) this.kick();
    });
    this.running.add(run);
  }

  /**
   * A job of a group ended its run: its place goes to the group's next job waiting here, unless
   * that job's lease has too little left to run in (it is put back, for any process to claim).
   */
  private placeFreed(key: string, durationMs: number): void {
    const state = this.group(key);
    state.running--;
    state.recording++;
    state.averageMs = state.averageMs === null ? durationMs : state.averageMs * 0.8 + durationMs * 0.2;
    while (state.running < this.options.perGroup && state.queued.length > 0 && !this.stopped) {
      const next = state.queued.shift()!;
      if (next.leaseUntil - this.clock.now() < this.options.leaseMs / 2) this.putBack(next);
      else this.begin(next);
    }
  }

  /** Gives a claimed job back unrun, due now, its claim not counted as an attempt. */
  private putBack(job: ClaimedJob): Promise<boolean> {
    return this.finish(job, { runAt: this.clock.now(), undoAttempt: true }, true).catch(() => false);
  }

  /**
   * How many jobs of a group this process keeps claimed, running or waiting: the group's places,
   * and while its jobs are quick, up to about PREFETCH_MS of its work beyond them (at most
   * PREFETCH_PLACES times its places), so that a busy group runs on between the transactions
   * that record its outcomes.
   */
  private depth(state: GroupState | undefined): number {
    const places = this.options.perGroup;
    if (state?.averageMs === null || state?.averageMs === undefined) return places;
    const ahead = Math.floor((places * PREFETCH_MS) / Math.max(1, state.averageMs));
    return Math.max(places, Math.min(places * PREFETCH_PLACES, ahead));
  }

  /** Runs a job and records its outcome; answers whether its place was handed on as it was recorded. */
  private async execute(job: ClaimedJob): Promise<boolean> {
    const handler = this.handlers.get(job.queue)!;
    const started = performance.now();
    let outcome: JobOutcome;
    let failed = false;
    try {
      outcome = await handler.run(job);
    } catch (error) {
      failed = true;
      this.log.error(
        { err: error, queue: job.queue, job: job.id, attempt: job.attempt },
        'job failed; it runs again later',
      );
      outcome = { runAt: this.clock.now() + backoffMs(job.attempt) };
    }
    const durationMs = performance.now() - started;
    if (job.groupKey !== null) this.placeFreed(job.groupKey, durationMs);
    let settled = false;
    try {
      const run = job.recurring ? { at: this.clock.now(), durationMs: Math.round(durationMs), failed } : undefined;
      settled = await this.finish(job, outcome, false, run);
    } catch (error) {
      failed = true;
      this.log.error(
        { err: error, queue: job.queue, job: job.id },
        "recording a job's outcome failed; it runs again when its lease ends",
      );
    }
    const stats = this.stats.get(job.queue)!;
    stats.runs++;
    if (failed) stats.failures++;
    stats.lastRunAt = this.clock.now();
    stats.lastDurationMs = performance.now() - started;
    stats.lastOutcome = failed ? 'failed' : 'done' in outcome ? 'done' : 'again';
    if (!('done' in outcome)) this.armAt(outcome.runAt);
    return settled;
  }

  /**
   * Records a job's outcome. Outcomes are recorded together, one transaction at a time and at
   * most one per finishGapMs under load (a delivery's outcome costs a statement or two, not a
   * transaction each; on SQLite each such transaction also takes the write lock from the requests);
   * when that transaction fails, each is recorded in one of its own, so that one bad record does
   * not take the others with it. The same transaction claims the next due jobs of the finished
   * jobs' groups (see handOn): a busy group (an endpoint with a backlog) keeps its places full
   * without a look over the whole queue.
   */
  private finish(job: ClaimedJob, outcome: JobOutcome, putBack = false, run?: RecurringRun): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.finishing.push({ job, outcome, putBack, run, resolve, reject });
      this.scheduleFinish();
    });
  }

  private scheduleFinish(): void {
    if (this.finishScheduled || this.finishingNow || this.finishing.length === 0) return;
    this.finishScheduled = true;
    const wait = this.lastFinishAt + this.options.finishGapMs - performance.now();
    const run = () => {
      this.finishScheduled = false;
      void this.finishBatch();
    };
    if (wait > 0) setTimeout(run, wait);
    else setImmediate(run);
  }

  private async finishBatch(): Promise<void> {
    this.finishingNow = true;
    this.lastFinishAt = performance.now();
    const batch = this.finishing.splice(0);
    try {
      const { claimed, kept } = await this.uow.run(async (w) => {
        await this.record(w, batch);
        return this.handOn(w, batch);
      });
      for (const job of claimed) this.begin(job);
      for (const entry of batch) entry.resolve(kept.has(entry.job.groupKey));
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      else {
        for (const entry of batch) {
          await this.uow.run((w) => this.record(w, [entry])).then(() => entry.resolve(false), entry.reject);
        }
      }
    } finally {
      this.recorded(batch);
      this.finishingNow = false;
      this.scheduleFinish();
    }
  }

  /**
   * A batch's outcomes are recorded (or failed to be), and the jobs claimed in their places begun:
   * a group with nothing left here is forgotten (how long its jobs took, too).
   */
  private recorded(batch: readonly Finishing[]): void {
    for (const { job, putBack } of batch) {
      const state = job.groupKey === null || putBack ? undefined : this.groups.get(job.groupKey);
      if (!state) continue;
      state.recording--;
      if (!this.busy(job.groupKey!)) this.groups.delete(job.groupKey!);
    }
  }

  /**
   * Claims, for each group of the batch, its due jobs up to what this process keeps of the group
   * (see handOnTarget). Answers them, and the groups whose places were seen to (handed on, or
   * left to other processes): a job of any other group lets a look claim after it.
   */
  private async handOn(
    w: Work,
    batch: readonly Finishing[],
  ): Promise<{ claimed: ClaimedJob[]; kept: Set<string | null> }> {
    const claimed: ClaimedJob[] = [];
    const kept = new Set<string | null>();
    if (this.stopped || !this.options.handOn) return { claimed, kept };
    // Jobs of no group end no one's place: the runner's own recurring work.
    kept.add(null);
    const keys = new Set(batch.filter((entry) => !entry.putBack).map((entry) => entry.job.groupKey));
    for (const key of keys) {
      if (key === null) continue;
      const state = this.groups.get(key);
      const held = (state?.running ?? 0) + (state?.queued.length ?? 0);
      const others = await countGroupLeasesOfOthers(w.trx, key, this.owner, w.now);
      const target = this.handOnTarget(state, others);
      if (target < 1 && others === 0) continue;
      kept.add(key);
      const rows = await claimGroupJobs(w.trx, key, target - held, {
        queues: this.queues,
        owner: this.owner,
        now: w.now,
        leaseUntil: w.now + this.options.leaseMs,
      });
      claimed.push(...rows.map(toClaimedJob));
    }
    return { claimed, kept };
  }

  /**
   * How many of a group's jobs this process keeps claimed as its jobs end. Alone, the group's
   * depth (see depth). Otherwise the group's places are shared: with nobody else holding any, all
   * but one (so that another process's look finds room and takes part); beside others, what they
   * leave, at most half, so that two processes busy with one endpoint settle at half each.
   */
  private handOnTarget(state: GroupState | undefined, others: number): number {
    const places = this.options.perGroup;
    if (this.options.alone) return others > 0 ? places - others : this.depth(state);
    if (others === 0) return places - 1;
    return Math.min(places - others, Math.ceil(places / 2));
  }

  /** Finishes the jobs this process still holds (deleted when done, put back for a retry) and writes their records. */
  private async record(w: Work, batch: readonly Finishing[]): Promise<void> {
    const done = batch.filter((entry) => 'done' in entry.outcome).map((entry) => entry.job.id);
    const deleted = new Set(await deleteClaimedJobs(w.trx, done, this.owner));
    for (const { job, outcome, run } of batch) {
      const mine =
        'done' in outcome
          ? deleted.has(job.id)
          : await rescheduleClaimedJob(w.trx, job.id, this.owner, outcome.runAt, {
              undoAttempt: outcome.undoAttempt === true,
              ...(run ? { lastRun: run } : {}),
            });
      if (!mine) {
        this.log.warn(
          { queue: job.queue, job: job.id },
          "a job's lease ran out before it finished; another claim has it",
        );
        continue;
      }
      await outcome.record?.(w);
    }
  }

  /** Wakes the runner at `at` (clock time) or at the next poll, whichever is sooner. */
  private armAt(at: number): void {
    if (this.stopped) return;
    const target = Math.min(at, this.clock.now() + this.options.pollMs);
    if (this.timer && target >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = target;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.timerAt = Number.POSITIVE_INFINITY;
        // A timer's claim also looks for the next due job (the poll's net).
        this.lastNextDueAt = Number.NEGATIVE_INFINITY;
        this.kick();
      },
      Math.max(0, target - this.clock.now()),
    ).unref();
  }

  /** SQLite: claims when another process committed to the file (its data_version moved). */
  private watchFile(version: { get(): number | undefined }): void {
    let last = version.get();
    this.watch = setInterval(() => {
      try {
        const now = version.get();
        if (now !== last) {
          last = now;
          this.kick();
        }
      } catch {
        // A closed database: stop() clears this timer next.
      }
    }, this.options.watchMs).unref();
  }
}

/** How long a job that threw waits before it runs again: 1 minute, doubling per attempt, at most an hour. */
function backoffMs(attempt: number): number {
  return Math.min(60_000 * 2 ** Math.min(attempt - 1, 6), 3_600_000);
}
