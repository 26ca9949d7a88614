import { setTimeout as sleep } from 'node:timers/promises';

// A long piece of background work (placing a million customers in VIP tiers again) is done a batch
// per transaction, so that the API's writes are never held back for long. What holds them back is
// the time a batch's transaction takes, not its number of rows, and that varies with the engine,
// the program and the machine's load. So batches are sized by time: each aims at BATCH_MS, and
// the work then rests as long as its batch took, leaving the write lock (SQLite) or the cores
// (PostgreSQL on a small machine) to the API at least half the time. SQLite's busy handler retries
// a waiting writer after 1, 3, 8, 18, 33 ms… and a writer that retakes the lock at once starves it
// into ever longer sleeps: with the rest, a waiting writer's worst wait stays near two batches.

/** How long one batch's transaction aims to take. */
export const BATCH_MS = 10;
const MIN_ROWS = 10;

/** The pace's clock and timer: the process's own (tests give theirs). */
export interface PaceTime {
  /** Milliseconds, monotonic. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL_TIME: PaceTime = { now: () => performance.now(), sleep: (ms) => sleep(ms).then(() => undefined) };

/** The size of the next batch of a long piece of work, and the rest after each. */
export class BatchPace {
  private rows: number;
  private started = 0;

  /** Starts at `initial` rows a batch (a guess), and never takes more than `max` (at least 1). */
  constructor(
    private readonly max: number,
    initial = Math.min(max, 50),
    private readonly time: PaceTime = REAL_TIME,
  ) {
    if (!(max >= 1)) throw new RangeError(`a batch takes at least one row (max ${max})`);
    this.rows = Math.max(1, Math.min(max, initial));
  }

  /** How many rows the next batch takes; the batch's time counts from here. */
  next(): number {
    this.started = this.time.now();
    return this.rows;
  }

  /** After a batch of `done` rows committed: sizes the next one by this one's time, and rests as long. */
  async rest(done: number): Promise<void> {
    const took = Math.max(this.time.now() - this.started, 0.1);
    if (done >= this.rows) {
      // Halfway to the size that would have taken BATCH_MS: one slow batch (a checkpoint, a busy
      // moment) does not halve the work's pace, and a run of them does.
      const fit = (done * BATCH_MS) / took;
      this.rows = Math.round(Math.min(this.max, Math.max(MIN_ROWS, (this.rows + fit) / 2)));
    }
    await this.time.sleep(took);
  }
}
