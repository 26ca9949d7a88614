import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.js';
import type { JobHandler } from './jobs/service.js';
import type { Services } from './services.js';
import type { Db } from './storage/db.js';
import { refreshStatistics } from './storage/statistics.js';
import type { UnitOfWork } from './storage/unit-of-work.js';

/** One piece of timed upkeep: it deletes what has expired and says how many rows went (0 for one that removes nothing). */
export interface Chore {
  readonly name: string;
  run(): Promise<number>;
}

/** How often the upkeep runs. */
export const HOUSEKEEPING_INTERVAL_MS = 5 * 60 * 1000;

/** The job runner's queue (and recurring job) of the upkeep. */
export const HOUSEKEEPING_QUEUE = 'housekeeping';

/**
 * The upkeep that used to ride on requests (every 200th keyed write purged idempotency keys inside
 * its own transaction; every sign-in pruned sessions; every code exchange pruned codes), now a
 * recurring job of the job runner: one process runs it every 5 minutes, whichever claims it. Each
 * chore is one short statement.
 */
export function choresOf(services: Services, db: Db, uow: UnitOfWork): Chore[] {
  return [
    { name: 'idempotency keys past 24 hours', run: () => services.idempotency.purgeExpired() },
    { name: 'expired sessions and sign-in throttles', run: () => services.sessions.pruneExpired() },
    { name: 'expired authorization codes', run: () => services.oauth.pruneExpiredCodes() },
    {
      name: 'query planner statistics',
      run: async () => {
        await refreshStatistics(db.kysely, uow);
        return 0;
      },
    },
  ];
}

/** The upkeep's chores, run one after another. */
export class Housekeeping {
  constructor(
    private readonly chores: readonly Chore[],
    private readonly log: FastifyBaseLogger,
  ) {}

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

  /** The recurring job: a pass, then the next one `intervalMs` later. */
  job(clock: Clock, intervalMs = HOUSEKEEPING_INTERVAL_MS): JobHandler {
    return {
      queue: HOUSEKEEPING_QUEUE,
      schedule: { key: HOUSEKEEPING_QUEUE },
      run: async () => {
        await this.runOnce();
        return { runAt: clock.now() + intervalMs };
      },
    };
  }
}
