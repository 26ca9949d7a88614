import type { FastifyBaseLogger } from 'fastify';
import type { Services } from './services.js';

/** One piece of timed upkeep: it deletes what has expired and says how many rows went. */
export interface Chore {
  readonly name: string;
  run(): Promise<number>;
}

/** How often a serving process does its upkeep. */
export const HOUSEKEEPING_INTERVAL_MS = 5 * 60 * 1000;

/**
 * The upkeep that used to ride on requests (every 200th keyed write purged idempotency keys inside
 * its own transaction; every sign-in pruned sessions; every code exchange pruned codes), now
 * timed, off the request path. Each chore is one short statement, safe to run on every process
 * at once (a row deleted twice is deleted once). The job runner of the events issue takes these
 * over when it exists.
 */
export function choresOf(services: Services): Chore[] {
  return [
    { name: 'idempotency keys past 24 hours', run: () => services.idempotency.purgeExpired() },
    { name: 'expired sessions and sign-in throttles', run: () => services.sessions.pruneExpired() },
    { name: 'expired authorization codes', run: () => services.oauth.pruneExpiredCodes() },
  ];
}

/** Runs the chores every `intervalMs` (the first pass at once), one pass at a time. */
export class Housekeeping {
  private timer: NodeJS.Timeout | undefined;
  /** The pass under way, if any: a tick that finds one skips its turn rather than queue behind it. */
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly chores: readonly Chore[],
    private readonly log: FastifyBaseLogger,
    private readonly intervalMs = HOUSEKEEPING_INTERVAL_MS,
  ) {}

  start(): void {
    const pass = () => {
      if (this.running) return;
      this.running = this.runOnce().finally(() => {
        this.running = undefined;
      });
    };
    pass();
    // Unreferenced: upkeep never keeps a process alive.
    this.timer = setInterval(pass, this.intervalMs).unref();
  }

  /**
   * One pass over every chore: rows removed by each, by name. A chore that fails is logged and
   * skipped (the next pass tries again); the others still run.
   */
  async runOnce(): Promise<Record<string, number>> {
    const removed: Record<string, number> = {};
    for (const chore of this.chores) {
      try {
        removed[chore.name] = await chore.run();
      } catch (error) {
        this.log.warn({ err: error, chore: chore.name }, 'housekeeping chore failed; retried at the next pass');
      }
    }
    if (Object.values(removed).some((rows) => rows > 0)) this.log.info({ removed }, 'housekeeping');
    return removed;
  }

  /** Stops the timer and waits for a pass under way (shutdown closes the database next). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
