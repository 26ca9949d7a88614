import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db } from '../storage/db.js';
import type { UnitOfWork } from '../storage/unit-of-work.js';
import {
  claimJobs,
  deleteClaimedJob,
  findClaimable,
  findNextDue,
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
}

/** What a queue's runs came to, for the metrics and the console. */
export interface QueueStats {
  runs: number;
  failures: number;
  lastRunAt: number | null;
  lastDurationMs: number | null;
  lastOutcome: 'done' | 'retry' | 'failed' | null;
}

const DEFAULTS = {
  maxInFlight: 64,
  perGroup: 10,
  leaseMs: 60_000,
  pollMs: 30_000,
  watchMs: 200,
  stopTimeoutMs: 5000,
};

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
  private readonly handlers: Map<string, JobHandler>;
  private readonly queues: string[];
  private readonly options: Required<JobRunnerOptions>;
  private inFlight = 0;
  private readonly running = new Set<Promise<void>>();
  private claiming: Promise<void> | null = null;
  private again = false;
  /** The last claim filled every free place: a finished job should claim again. */
  private starved = false;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private watch: NodeJS.Timeout | null = null;
  private readonly unsubscribe: (() => void)[] = [];
  private stopped = true;

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
    this.options = { ...DEFAULTS, ...options };
    for (const queue of this.queues) {
      this.stats.set(queue, { runs: 0, failures: 0, lastRunAt: null, lastDurationMs: null, lastOutcome: null });
    }
  }

  /** Makes the recurring jobs that are missing, starts listening for wake-ups, and claims what is due. */
  async start(): Promise<void> {
    this.stopped = false;
    for (const handler of this.handlers.values()) {
      if (handler.schedule) await this.jobs.ensureScheduled(handler.queue, handler.schedule.key);
    }
    this.unsubscribe.push(this.jobs.onWake(() => this.kick()));
    const feed = this.db.changes;
    if (feed && 'onJobs' in feed && typeof feed.onJobs === 'function') {
      this.unsubscribe.push((feed.onJobs as (listener: () => void) => () => void)(() => this.kick()));
      void feed.isLive();
    }
    if (this.db.sqlite) this.watchFile(this.db.sqlite.writer.prepare<[], number>('PRAGMA data_version').pluck());
    this.kick();
  }

  /** Claims what is due now (coalescing: a claim under way takes another turn instead). */
  kick(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.claiming = this.claimLoop().finally(() => {
      this.claiming = null;
    });
  }

  /**
   * Runs every job due now and waits for them (and for what they make due at once): for tests and
   * the CLI, which move the clock or need the work done before they go on. Answers how many ran.
   */
  async runDue(): Promise<number> {
    let ran = 0;
    for (;;) {
      const claimed = await this.claim(this.options.maxInFlight);
      if (claimed.length === 0 && this.running.size === 0) return ran;
      ran += claimed.length;
      for (const row of claimed) this.begin(row);
      await Promise.allSettled([...this.running]);
    }
  }

  /** Stops claiming, waits (up to stopTimeoutMs) for the jobs under way; the rest are due again when their lease ends. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.watch) clearInterval(this.watch);
    for (const stop of this.unsubscribe.splice(0)) stop();
    await this.claiming;
    const timeout = new Promise((resolve) => setTimeout(resolve, this.options.stopTimeoutMs).unref());
    await Promise.race([Promise.allSettled([...this.running]), timeout]);
  }

  private async claimLoop(): Promise<void> {
    try {
      do {
        this.again = false;
        const room = this.options.maxInFlight - this.inFlight;
        if (room <= 0) {
          this.starved = true;
          return;
        }
        const claimed = await this.claim(room);
        for (const row of claimed) this.begin(row);
        this.starved = claimed.length === room;
        if (this.starved) this.again = true;
      } while (this.again && !this.stopped);
      if (!this.stopped) this.armAt((await findNextDue(this.db.kysely, this.queues)) ?? Number.POSITIVE_INFINITY);
    } catch (error) {
      this.log.warn({ err: error }, 'claiming jobs failed; trying again at the next wake-up or poll');
      this.armAt(this.clock.now() + 1000);
    }
  }

  private claim(limit: number): Promise<ReturnType<typeof toClaimedJob>[]> {
    if (this.queues.length === 0) return Promise.resolve([]);
    return this.uow.run(async (w) => {
      const ids = await findClaimable(w.trx, {
        queues: this.queues,
        now: w.now,
        limit,
        perGroup: this.options.perGroup,
        scan: CLAIM_SCAN,
      });
      const rows = await claimJobs(w.trx, ids, {
        owner: this.owner,
        now: w.now,
        leaseUntil: w.now + this.options.leaseMs,
      });
      return rows.map(toClaimedJob);
    });
  }

  private begin(job: ClaimedJob): void {
    this.inFlight++;
    const run = this.execute(job).finally(() => {
      this.inFlight--;
      this.running.delete(run);
      if (this.starved) this.kick();
    });
    this.running.add(run);
  }

  private async execute(job: ClaimedJob): Promise<void> {
    const handler = this.handlers.get(job.queue)!;
    const started = performance.now();
    let outcome: JobOutcome;
    let failed = false;
    try {
      outcome = await handler.run(job);
    } catch (error) {
      failed = true;
      this.log.error({ err: error, queue: job.queue, job: job.id, attempt: job.attempt }, 'job failed; it runs again later');
      outcome = { retryAt: this.clock.now() + Math.min(60_000 * 2 ** Math.min(job.attempt - 1, 6), 3_600_000) };
    }
    try {
      await this.uow.run(async (w) => {
        const mine =
          'done' in outcome
            ? await deleteClaimedJob(w.trx, job.id, this.owner)
            : await rescheduleClaimedJob(w.trx, job.id, this.owner, outcome.retryAt);
        if (!mine) {
          this.log.warn({ queue: job.queue, job: job.id }, "a job's lease ran out before it finished; another claim has it");
          return;
        }
        await outcome.record?.(w);
      });
    } catch (error) {
      failed = true;
      this.log.error({ err: error, queue: job.queue, job: job.id }, "recording a job's outcome failed; it runs again when its lease ends");
    }
    const stats = this.stats.get(job.queue)!;
    stats.runs++;
    if (failed) stats.failures++;
    stats.lastRunAt = this.clock.now();
    stats.lastDurationMs = performance.now() - started;
    stats.lastOutcome = failed ? 'failed' : 'done' in outcome ? 'done' : 'retry';
    if (!('done' in outcome)) this.armAt(outcome.retryAt);
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

