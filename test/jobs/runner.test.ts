import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { claimJobs, deleteClaimedJobs, findClaimable } from '../../src/jobs/repository.js';
import { JobRunner, type JobRunnerOptions } from '../../src/jobs/runner.js';
import { type ClaimedJob, type JobHandler, JobsService } from '../../src/jobs/service.js';
import { type Db, openDb } from '../../src/storage/db.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { createTestDb, FakeClock, type TestDb } from '../helpers/app.js';
import { eventually, sleep } from '../helpers/wait.js';

// The job runner on a real database of each engine: claims with leases, retries, schedules,
// wake-ups on commit, and several runners (as several processes would be) sharing one queue.

const silent = pino({ level: 'silent' });
const QUEUE = 'test.work';

/** Jobs still in the table. */
const jobsLeft = async (db: Db) =>
  Number(
    (
      await db.kysely
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('the job runner', () => {
  let test: TestDb;
  let clock: FakeClock;
  let jobs: JobsService;
  let uow: UnitOfWork;
  const runners: JobRunner[] = [];
  const others: Db[] = [];

  beforeEach(async () => {
    test = await createTestDb();
    clock = new FakeClock(Date.UTC(2026, 5, 1));
    jobs = new JobsService(test.db, clock);
    uow = new UnitOfWork(test.db.kysely, clock);
  });
  afterEach(async () => {
    for (const runner of runners.splice(0)) await runner.stop();
    for (const db of others.splice(0)) await db.close();
    await test.destroy();
  });

  const runner = (handlers: JobHandler[], options: JobRunnerOptions = {}, db: Db = test.db, on = jobs) => {
    const made = new JobRunner(db, new UnitOfWork(db.kysely, clock), on, clock, handlers, silent, options);
    runners.push(made);
    return made;
  };
  const handler = (run: (job: ClaimedJob) => Promise<unknown>, queue = QUEUE): JobHandler => ({
    queue,
    run: async (job) => (await run(job)) as never,
  });
  const add = (count: number, extra: { groupKey?: string; runAt?: number } = {}, first = 0) =>
    uow.run((w) =>
      jobs.enqueue(
        w,
        Array.from({ length: count }, (_, i) => ({ queue: QUEUE, subjectId: first + i, ...extra })),
      ),
    );
  const remaining = () => jobsLeft(test.db);

  it('adds nothing when the work rolls back, and wakes the runner only after a commit', async () => {
    let woken = 0;
    jobs.onWake(() => woken++);
    await expect(
      uow.run(async (w) => {
        await jobs.enqueue(w, [{ queue: QUEUE }]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await remaining()).toBe(0);
    expect(woken).toBe(0);
    await add(2);
    expect(await remaining()).toBe(2);
    expect(woken).toBe(1);
  });

  it('runs what is due, deletes what is done, and runs a retry when its time comes', async () => {
    const seen: string[] = [];
    const work = runner([
      handler(async (job) => {
        seen.push(`${job.subjectId}#${job.attempt}`);
        return job.subjectId === 0 && job.attempt === 1 ? { runAt: clock.now() + 5000 } : { done: true };
      }),
    ]);
    await add(2);
    await add(1, { runAt: clock.now() + 60_000 }, 100);
    expect(await work.runDue()).toBe(2);
    expect(seen.sort()).toEqual(['0#1', '1#1']);
    expect(await work.runDue()).toBe(0);
    clock.advance(5000);
    expect(await work.runDue()).toBe(1);
    expect(seen).toContain('0#2');
    clock.advance(55_000);
    expect(await work.runDue()).toBe(1);
    expect(await remaining()).toBe(0);
  });

  it('retries a job whose handler throws, later, and counts the failure', async () => {
    let calls = 0;
    const work = runner([
      handler(async () => {
        calls++;
        if (calls === 1) throw new Error('receiver away');
        return { done: true };
      }),
    ]);
    await add(1);
    await work.runDue();
    expect(calls).toBe(1);
    expect(await remaining()).toBe(1);
    expect(work.stats.get(QUEUE)).toMatchObject({ runs: 1, failures: 1, lastOutcome: 'failed' });
    clock.advance(60_000);
    await work.runDue();
    expect(calls).toBe(2);
    expect(await remaining()).toBe(0);
  });

  it('keeps one row per recurring job, however many runners start, and runs it on its schedule', async () => {
    let runs = 0;
    const recurring: JobHandler = {
      queue: 'test.recurring',
      schedule: { key: 'test.recurring' },
      run: async () => {
        runs++;
        return { runAt: clock.now() + 3_600_000 };
      },
    };
    const first = runner([recurring], { pollMs: 3_600_000 });
    const second = runner([recurring], { pollMs: 3_600_000 });
    expect(await Promise.all([first.prepare(), second.prepare()])).toEqual([true, true]);
    expect(await remaining()).toBe(1);
    // Made at start, it runs first a minute later: a starting process writes nothing more.
    expect(await first.runDue()).toBe(0);
    clock.advance(60_000);
    await first.runDue();
    await second.runDue();
    expect(runs).toBe(1);
    clock.advance(3_600_000);
    await second.runDue();
    expect(runs).toBe(2);
    expect((await jobs.scheduled('test.recurring'))?.attempt).toBe(2);
  });

  it("keeps a recurring job's last run on its row, for every process to show: when, how long, and whether it failed", async () => {
    let fail = false;
    const recurring: JobHandler = {
      queue: 'test.recurring',
      schedule: { key: 'test.recurring' },
      run: async () => {
        clock.advance(250);
        if (fail) throw new Error('the pass failed');
        return { runAt: clock.now() + 3_600_000 };
      },
    };
    const one = runner([recurring], { pollMs: 3_600_000 });
    await one.prepare();
    expect(await jobs.recurring()).toEqual([
      {
        key: 'test.recurring',
        queue: 'test.recurring',
        nextRunAt: clock.now() + 60_000,
        running: false,
        lastRunAt: null,
        lastDurationMs: null,
        lastFailed: null,
      },
    ]);
    clock.advance(60_000);
    await one.runDue();
    const [done] = await jobs.recurring();
    expect(done).toMatchObject({ lastRunAt: clock.now(), lastFailed: false, nextRunAt: clock.now() + 3_600_000 });
    expect(done!.lastDurationMs).toBeGreaterThanOrEqual(0);
    fail = true;
    clock.advance(3_600_000);
    await one.runDue();
    const [failed] = await jobs.recurring();
    expect(failed).toMatchObject({ lastRunAt: clock.now(), lastFailed: true });
    expect(failed!.nextRunAt).toBeGreaterThan(clock.now());
  });

  it("takes over a crashed claimer's job when its lease ends, and the late claimer's outcome is dropped", async () => {
    await add(1);
    // A claim by a process that then died: the job is held until the lease ends.
    const [claimed] = await uow.run(async (w) =>
      claimJobs(w.trx, await findClaimable(w.trx, { queues: [QUEUE], now: w.now, limit: 1, perGroup: 10, scan: 10 }), {
        owner: 'crashed',
        now: w.now,
        leaseUntil: w.now + 60_000,
      }),
    );
    expect(claimed?.lease_owner).toBe('crashed');
    const attempts: number[] = [];
    let lateFinish: boolean | undefined;
    const work = runner(
      [
        handler(async (job) => {
          attempts.push(job.attempt);
          // The first claimer coming back late to finish: the job is no longer its own.
          lateFinish = (await uow.run((w) => deleteClaimedJobs(w.trx, [job.id], 'crashed'))).length > 0;
          return { done: true };
        }),
      ],
      { leaseMs: 60_000 },
    );
    expect(await work.runDue()).toBe(0);
    clock.advance(60_000);
    expect(await work.runDue()).toBe(1);
    expect(attempts).toEqual([2]);
    expect(lateFinish).toBe(false);
    expect(await remaining()).toBe(0);
  });

  it('never has more than perGroup jobs of one group in flight, across runners', async () => {
    await add(30, { groupKey: 'webhook_endpoint:1' });
    await add(5, { groupKey: 'webhook_endpoint:2' });
    let inFlight = 0;
    let most = 0;
    const other = openDb(test.url);
    others.push(other);
    const slow = handler(async (job) => {
      if (job.groupKey === 'webhook_endpoint:1') {
        inFlight++;
        most = Math.max(most, inFlight);
        await sleep(30);
        inFlight--;
      }
      return { done: true };
    });
    const one = runner([slow], { perGroup: 4 });
    const two = runner([slow], { perGroup: 4 }, other, new JobsService(other, clock));
    await Promise.all([one.runDue(), two.runDue()]);
    // Each runDue waits for its claims; what a cap left behind is claimed on the next rounds.
    while ((await remaining()) > 0) await Promise.all([one.runDue(), two.runDue()]);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(4);
  });

  it("never lets a full group's backlog, longer than a claim's scan, hide another group's due job", async () => {
    // A slow endpoint: 4 attempts in flight (its cap) and 60 more due before anyone else's.
    await add(64, { groupKey: 'webhook_endpoint:slow' });
    await uow.run(async (w) =>
      claimJobs(w.trx, await findClaimable(w.trx, { queues: [QUEUE], now: w.now, limit: 4, perGroup: 4, scan: 10 }), {
        owner: 'busy',
        now: w.now,
        leaseUntil: w.now + 60_000,
      }),
    );
    clock.advance(1000);
    await add(1, { groupKey: 'webhook_endpoint:fast' }, 1000);
    const claimable = await uow.run((w) =>
      findClaimable(w.trx, { queues: [QUEUE], now: w.now, limit: 10, perGroup: 4, scan: 10 }),
    );
    const rows = await test.db.kysely
      .selectFrom('jobs')
      .select(['id', 'group_key'])
      .where('id', 'in', claimable)
      .execute();
    expect(rows.map((row) => row.group_key)).toEqual(['webhook_endpoint:fast']);
  });

  it('shares a few hundred jobs between two runners on separate connections: each run exactly once', async () => {
    const other = openDb(test.url);
    others.push(other);
    await add(300);
    const runs = new Map<number, number>();
    let concurrent = 0;
    const count = handler(async (job) => {
      concurrent++;
      runs.set(job.subjectId!, (runs.get(job.subjectId!) ?? 0) + 1);
      await sleep(1);
      concurrent--;
      return { done: true };
    });
    const one = runner([count], { maxInFlight: 16 });
    const two = runner([count], { maxInFlight: 16 }, other, new JobsService(other, clock));
    await Promise.all([one.runDue(), two.runDue(), one.runDue(), two.runDue()]);
    while ((await remaining()) > 0) await Promise.all([one.runDue(), two.runDue()]);
    expect(runs.size).toBe(300);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(concurrent).toBe(0);
  });
});

describe('the job runner on the system clock', () => {
  let test: TestDb;
  let jobs: JobsService;
  let work: JobRunner | undefined;
  beforeEach(async () => {
    test = await createTestDb();
    jobs = new JobsService(test.db, systemClock);
  });
  afterEach(async () => {
    await work?.stop();
    await test.destroy();
  });

  it('runs a committed job at once, woken by the commit, and makes no claim while idle', async () => {
    const ran: number[] = [];
    work = new JobRunner(
      test.db,
      new UnitOfWork(test.db.kysely, systemClock),
      jobs,
      systemClock,
      [
        {
          queue: QUEUE,
          run: async () => {
            ran.push(Date.now());
            return { done: true };
          },
        },
      ],
      silent,
      // No poll within the test: only the commit can wake it.
      { pollMs: 600_000 },
    );
    work.start();
    expect(await eventually(async () => work!.looks > 0, 5000, 10)).toBe(true);
    await sleep(100);
    const idle = work.looks;
    await sleep(1000);
    // Idle: no look, no claim (nothing was due, so nothing was ever written either).
    expect(work.looks).toBe(idle);
    expect(work.claims).toBe(0);

    const committed = Date.now();
    await new UnitOfWork(test.db.kysely, systemClock).run((w) => jobs.enqueue(w, [{ queue: QUEUE }]));
    expect(await eventually(async () => ran.length === 1, 5000, 5)).toBe(true);
    expect(ran[0]! - committed).toBeLessThan(1000);
  });

  it('is woken by a commit made on another connection (the CLI), on both engines', async () => {
    const ran: number[] = [];
    work = new JobRunner(
      test.db,
      new UnitOfWork(test.db.kysely, systemClock),
      jobs,
      systemClock,
      [
        {
          queue: QUEUE,
          run: async () => {
            ran.push(Date.now());
            return { done: true };
          },
        },
      ],
      silent,
      { pollMs: 600_000 },
    );
    work.start();
    const cli = openDb(test.url);
    try {
      // PostgreSQL: the feed must be listening before the NOTIFY is sent.
      if (test.db.changes && 'isLive' in test.db.changes) {
        await eventually(async () => Boolean(await test.db.changes!.isLive()), 10_000, 20);
      }
      const committed = Date.now();
      // A process without a runner: its JobsService has no wake listener, so it tells the servers.
      await new UnitOfWork(cli.kysely, systemClock).run((w) =>
        new JobsService(cli, systemClock).enqueue(w, [{ queue: QUEUE }]),
      );
      expect(await eventually(async () => ran.length === 1, 5000, 5)).toBe(true);
      expect(ran[0]! - committed).toBeLessThan(1000);
    } finally {
      await cli.close();
    }
  });
});

describe('the job runner handing a group’s places on as it records (started runners, system clock)', () => {
  let test: TestDb;
  const runners: JobRunner[] = [];
  const others: Db[] = [];
  beforeEach(async () => {
    test = await createTestDb();
  });
  afterEach(async () => {
    for (const runner of runners.splice(0)) await runner.stop();
    for (const db of others.splice(0)) await db.close();
    await test.destroy();
  });

  const GROUP = 'webhook_endpoint:busy';
  /** Each started runner's jobs service: what wakes it, as its process's commits would. */
  const wakers = new Map<JobRunner, JobsService>();
  const start = (db: Db, handler: JobHandler, options: JobRunnerOptions) => {
    const service = new JobsService(db, systemClock);
    const made = new JobRunner(db, new UnitOfWork(db.kysely, systemClock), service, systemClock, [handler], silent, {
      pollMs: 600_000,
      ...options,
    });
    runners.push(made);
    wakers.set(made, service);
    made.start();
    return made;
  };
  const left = () => jobsLeft(test.db);

  // Two runners (as two processes): never more than the group's places running at once across
  // both, every job run once; with hand-on far fewer looks than jobs (a look per place freed is
  // what it saves), and sharing the places, both take part. Claiming ahead ("alone") is checked
  // here too, although only a process alone on its database does it: even then no job runs twice.
  for (const mode of ['shared', 'alone', 'looks'] as const) {
    const handOn = mode !== 'looks';
    it(`runs a backlog of one group at most perGroup at a time across two runners, each job once (${mode})`, {
      timeout: 60_000,
    }, async () => {
      const JOBS = 400;
      await new UnitOfWork(test.db.kysely, systemClock).run((w) =>
        new JobsService(test.db, systemClock).enqueue(
          w,
          Array.from({ length: JOBS }, (_, i) => ({ queue: QUEUE, groupKey: GROUP, subjectId: i })),
        ),
      );
      const runs = new Map<number, number>();
      const byRunner = [0, 0];
      let running = 0;
      let most = 0;
      const work: JobHandler = {
        queue: QUEUE,
        run: async (job) => {
          running++;
          most = Math.max(most, running);
          runs.set(job.subjectId!, (runs.get(job.subjectId!) ?? 0) + 1);
          await sleep(1);
          running--;
          return { done: true };
        },
      };
      const other = openDb(test.url);
      others.push(other);
      const counted = (index: number): JobHandler => ({
        queue: QUEUE,
        run: (job) => {
          byRunner[index]!++;
          return work.run(job);
        },
      });
      const options = { perGroup: 4, handOn, alone: mode === 'alone' };
      const one = start(test.db, counted(0), options);
      const two = start(other, counted(1), options);
      // What each process's own traffic does: its commits of the group's jobs wake it (a runner
      // busy with the group lets them pass), and a look finds the room the other leaves.
      const traffic = setInterval(() => {
        for (const runner of [one, two]) wakers.get(runner)!.wake(new Set([GROUP]));
      }, 20);
      const drained = await eventually(async () => (await left()) === 0, 50_000, 50).finally(() =>
        clearInterval(traffic),
      );
      expect(drained).toBe(true);
      expect(runs.size).toBe(JOBS);
      if (mode === 'shared') expect(Math.min(...byRunner), `jobs by runner: ${byRunner}`).toBeGreaterThan(0);
      expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
      expect(most).toBeGreaterThan(1);
      expect(most).toBeLessThanOrEqual(4);
      if (handOn) expect(one.looks + two.looks).toBeLessThan(JOBS / 4);
    });
  }

  it('gives back, unrun and not counted as an attempt, a job claimed ahead whose lease runs short', async () => {
    // A slow group: its places are full while a claimed-ahead job's lease (2 s here) runs below half.
    await new UnitOfWork(test.db.kysely, systemClock).run((w) =>
      new JobsService(test.db, systemClock).enqueue(
        w,
        Array.from({ length: 16 }, (_, i) => ({ queue: QUEUE, groupKey: GROUP, subjectId: i })),
      ),
    );
    const attempts: number[] = [];
    let quick = true;
    const work: JobHandler = {
      queue: QUEUE,
      run: async (job) => {
        attempts.push(job.attempt);
        // Quick at first (so the runner claims ahead), then slow.
        await sleep(quick ? 1 : 1500);
        return { done: true };
      },
    };
    const runner = start(test.db, work, { perGroup: 2, leaseMs: 2000, alone: true });
    await eventually(async () => attempts.length >= 4, 10_000, 5);
    quick = false;
    expect(await eventually(async () => (await left()) === 0, 50_000, 50)).toBe(true);
    // Every job ran once, and as its first attempt: none ran on a lease run out (another claim
    // would have run it again), and one given back was not counted.
    expect(attempts).toHaveLength(16);
    expect(attempts.filter((n) => n !== 1)).toEqual([]);
    expect(runner.stats.get(QUEUE)?.failures).toBe(0);
  });
});
