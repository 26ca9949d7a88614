import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import type { FastifyBaseLogger } from 'fastify';
import type { QueueStats } from './jobs/runner.js';
import type { JobsService } from './jobs/service.js';
import { JOB_THREAD, SharedWriteLock, serveWriteTurn, type WriteTurn } from './storage/write-turns.js';

/** What the job thread is started with. */
export interface BackgroundData {
  /** SQLite: the process's write lock (see SharedWriteLock); null on PostgreSQL. */
  writeLock: SharedArrayBuffer | null;
  /** WORKERS=N on SQLite: where the job thread asks for the primary's turn (see portWriteTurn). */
  upstreamTurn: MessagePort | null;
}

/** The serving thread's messages to the job thread. */
export type BackgroundMessage =
  | { type: 'wake'; groups: (string | null)[] | null }
  | { type: 'figures'; id: number }
  | { type: 'stop' };

/** The job thread's messages to the serving thread. */
export type BackgroundReply =
  | { type: 'ready' }
  | {
      type: 'figures';
      id: number;
      queues: [string, QueueStats][];
      webhookAttempts: { succeeded: number; failed: number };
    };

/** What the metrics show of the background work: runs by queue, webhook attempts by outcome. */
export interface BackgroundFigures {
  queues: ReadonlyMap<string, QueueStats>;
  webhookAttempts: { succeeded: number; failed: number };
}

/** How long a scrape waits for the job thread's figures. */
const FIGURES_WAIT_MS = 1000;
/** A job thread that died is started again after this long. */
const RESTART_AFTER_MS = 1000;
/** How long stop() waits for the job thread to finish its jobs and close its connection. */
const STOP_WAIT_MS = 10_000;

/**
 * The process's background work (webhook deliveries, upkeep, the scheduled jobs: the JobRunner)
 * runs on a thread of its own, with its own connection: the serving thread's event loop, busy
 * with requests under load, would otherwise hold back every step of a delivery (its claim, its
 * POST, its record), and its CPU would go to deliveries rather than to requests. The serving
 * thread wakes the job thread when it commits new jobs, and asks it for its figures at each
 * scrape. A job thread that dies is started again; its claims are taken over when their leases
 * end, as a crashed process's are.
 */
export class BackgroundThread {
  private worker: Worker | null = null;
  private stopping = false;
  private pendingGroups: Set<string | null> | null = null;
  private wakeAll = false;
  private nextId = 0;
  private readonly waiting = new Map<number, (figures: BackgroundFigures | null) => void>();
  private figuresRead: Promise<BackgroundFigures | null> | null = null;
  private readonly unsubscribe: () => void;

  /**
   * @param writeLock SQLite: the process's write lock, which the serving thread's connection and
   *   the job thread's take in turns; null on PostgreSQL.
   * @param upstream WORKERS=N on SQLite: the primary's turn, taken for the job thread too.
   */
  private constructor(
    jobs: JobsService,
    private readonly log: FastifyBaseLogger,
    private readonly writeLock: SharedArrayBuffer | null,
    private readonly upstream: WriteTurn | undefined,
  ) {
    this.unsubscribe = jobs.onWake((groups) => this.wake(groups));
  }

  /** Starts the job thread and waits until it has written the recurring jobs' rows and started. */
  static async start(
    jobs: JobsService,
    log: FastifyBaseLogger,
    lock: { buffer: SharedArrayBuffer; upstream?: WriteTurn } | null,
  ): Promise<BackgroundThread> {
    const thread = new BackgroundThread(jobs, log, lock?.buffer ?? null, lock?.upstream);
    await thread.spawn();
    return thread;
  }

  /** The figures of the job thread's work so far; null when it does not answer in time. */
  figures(): Promise<BackgroundFigures | null> {
    this.figuresRead ??= this.askFigures().finally(() => {
      this.figuresRead = null;
    });
    return this.figuresRead;
  }

  /** Stops the job thread: it finishes the jobs under way (within its runner's limit) and closes its connection. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.unsubscribe();
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ type: 'stop' } satisfies BackgroundMessage);
    const late = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), STOP_WAIT_MS).unref());
    if ((await Promise.race([exited, late])) === 'late') {
      this.log.error('the job thread did not stop in time; ending it');
      await worker.terminate();
    }
  }

  /** Wakes the job thread for jobs this thread committed: once per turn of the event loop, whatever the commits. */
  private wake(groups: ReadonlySet<string | null> | undefined): void {
    const first = this.pendingGroups === null && !this.wakeAll;
    if (groups === undefined) this.wakeAll = true;
    else {
      this.pendingGroups ??= new Set();
      for (const group of groups) this.pendingGroups.add(group);
    }
    if (!first) return;
    setImmediate(() => {
      const message: BackgroundMessage = {
        type: 'wake',
        groups: this.wakeAll || this.pendingGroups === null ? null : [...this.pendingGroups],
      };
      this.pendingGroups = null;
      this.wakeAll = false;
      this.worker?.postMessage(message);
    });
  }

  private askFigures(): Promise<BackgroundFigures | null> {
    const worker = this.worker;
    if (!worker) return Promise.resolve(null);
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(null);
      }, FIGURES_WAIT_MS);
      this.waiting.set(id, (figures) => {
        clearTimeout(timer);
        resolve(figures);
      });
      worker.postMessage({ type: 'figures', id } satisfies BackgroundMessage);
    });
  }

  private spawn(): Promise<void> {
    let upstreamTurn: MessagePort | null = null;
    let served: { close(): void } | null = null;
    if (this.upstream) {
      const channel = new MessageChannel();
      served = serveWriteTurn(channel.port1, this.upstream);
      channel.port1.unref();
      upstreamTurn = channel.port2;
    }
    const data: BackgroundData = { writeLock: this.writeLock, upstreamTurn };
    const worker = new Worker(new URL('./background-worker.js', import.meta.url), {
      workerData: data,
      transferList: upstreamTurn ? [upstreamTurn] : [],
    });
    this.worker = worker;
    return new Promise((resolve, reject) => {
      let ready = false;
      worker.on('message', (message: BackgroundReply) => {
        if (message.type === 'ready') {
          ready = true;
          resolve();
        } else if (message.type === 'figures') {
          this.waiting.get(message.id)?.({
            queues: new Map(message.queues),
            webhookAttempts: message.webhookAttempts,
          });
          this.waiting.delete(message.id);
        }
      });
      worker.on('error', (error) => {
        this.log.error({ err: error }, 'the job thread failed');
        if (!ready) reject(error);
      });
      worker.on('exit', (code) => {
        this.worker = null;
        // A thread that died holding the write lock (or the primary's turn) gives it back.
        served?.close();
        if (this.writeLock) SharedWriteLock.releaseFor(this.writeLock, JOB_THREAD);
        if (this.stopping || !ready) return;
        this.log.error({ code }, `the job thread stopped; starting it again in ${RESTART_AFTER_MS} ms`);
        setTimeout(() => {
          if (!this.stopping)
            this.spawn().catch((error) => this.log.error({ err: error }, 'the job thread could not start'));
        }, RESTART_AFTER_MS).unref();
      });
    });
  }
}
