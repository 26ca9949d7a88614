import { type Kysely, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import { isPostgres } from '../storage/dialect.js';
import type { Database, JobRow } from '../storage/schema.js';

/** A job's run_at while it waits for something outside the runner (a disabled endpoint): never due. */
export const PARKED_AT = 8_640_000_000_000_000;

/** One row for the jobs table. */
export interface NewJobRow {
  queue: string;
  account_id: number | null;
  group_key: string | null;
  subject_id: number | null;
  payload: string;
  unique_key: string | null;
  run_at: number;
  created_at: number;
}

/** Inserts jobs, in one statement. */
export async function insertJobs(trx: Transaction<Database>, jobs: readonly NewJobRow[]): Promise<void> {
  if (jobs.length > 0) await trx.insertInto('jobs').values(jobs).execute();
}

/** Inserts the job unless one with its unique_key exists; true when inserted. */
export async function insertJobOnce(db: Kysely<Database>, job: NewJobRow & { unique_key: string }): Promise<boolean> {
  const result = await db
    .insertInto('jobs')
    .values(job)
    .onConflict((oc) => oc.column('unique_key').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/**
 * The ids of up to `limit` due jobs of `queues`, oldest due first, leaving out those whose group
 * already has `perGroup` jobs in flight (claimed, lease running) or would have with these.
 * Only the first `scan` due rows of groups with room are looked at, so a backlog costs about the
 * same as a short queue; a full group's rows are passed over before that window is cut, so that
 * one slow endpoint's backlog, however long, never hides the other groups' jobs behind it. The
 * full groups are found in the partial index of leased jobs (jobs_leased), as small as the work
 * in flight.
 */
export async function findClaimable(
  db: Kysely<Database>,
  options: { queues: readonly string[]; now: number; limit: number; perGroup: number; scan: number },
): Promise<number[]> {
  const { queues, now, limit, perGroup, scan } = options;
  const rows = await sql<{ id: number }>`
    select due.id from (
      select first.id, first.run_at, first.group_key,
        row_number() over (partition by coalesce(first.group_key, 'job:' || first.id) order by first.run_at, first.id) as position
      from (
        select id, run_at, group_key from jobs
        where run_at <= ${now} and queue in (${sql.join(queues)})
          and (group_key is null or group_key not in (
            select full_group.group_key from jobs full_group
            where full_group.lease_owner is not null and full_group.run_at > ${now}
              and full_group.group_key is not null
            group by full_group.group_key
            having count(*) >= ${perGroup}
          ))
        order by run_at, id
        limit ${scan}
      ) first
    ) due
    where due.group_key is null or due.position <= ${perGroup} - (
      select count(*) from jobs busy
      where busy.group_key = due.group_key and busy.lease_owner is not null and busy.run_at > ${now}
    )
    order by due.run_at, due.id
    limit ${limit}`.execute(db);
  return rows.rows.map((row) => Number(row.id));
}

/**
 * Claims the jobs of `ids` that are still due (on PostgreSQL skipping rows another claimer has
 * locked): each gets `owner`, run_at at the lease's end and one more attempt.
 */
export async function claimJobs(
  trx: Transaction<Database>,
  ids: readonly number[],
  claim: { owner: string; now: number; leaseUntil: number },
): Promise<JobRow[]> {
  if (ids.length === 0) return [];
  const still = trx
    .selectFrom('jobs')
    .select('id')
    .where('id', 'in', ids)
    .where('run_at', '<=', claim.now)
    .$if(isPostgres(trx), (query) => query.forUpdate().skipLocked());
  return lease(trx, still, claim);
}

/**
 * Claims up to `limit` due jobs of one group, oldest due first (on PostgreSQL skipping rows another
 * claimer has locked): a group's finished jobs handing their places on, in the transaction that
 * records them (see JobRunner.record). Served by the index on (group_key, run_at), so it costs the
 * same however long the group's backlog, or the queue's.
 */
export async function claimGroupJobs(
  trx: Transaction<Database>,
  groupKey: string,
  limit: number,
  claim: { queues: readonly string[]; owner: string; now: number; leaseUntil: number },
): Promise<JobRow[]> {
  if (limit <= 0) return [];
  const next = trx
    .selectFrom('jobs')
    .select('id')
    .where('group_key', '=', groupKey)
    .where('run_at', '<=', claim.now)
    .where('queue', 'in', claim.queues)
    .orderBy('run_at')
    .orderBy('id')
    .limit(limit)
    .$if(isPostgres(trx), (query) => query.forUpdate().skipLocked());
  return lease(trx, next, claim);
}

/** Leases the jobs `ids` selects to `claim.owner` until `claim.leaseUntil`, one more attempt each. */
function lease(
  trx: Transaction<Database>,
  ids: SelectQueryBuilder<Database, 'jobs', { id: number }>,
  claim: { owner: string; leaseUntil: number },
): Promise<JobRow[]> {
  return trx
    .updateTable('jobs')
    .set((eb) => ({ lease_owner: claim.owner, run_at: claim.leaseUntil, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', ids)
    .returningAll()
    .execute();
}

/** How many of a group's jobs other claimers than `owner` hold (leased, lease running). */
export async function countGroupLeasesOfOthers(
  trx: Transaction<Database>,
  groupKey: string,
  owner: string,
  now: number,
): Promise<number> {
  const row = await trx
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('held'))
    .where('group_key', '=', groupKey)
    .where('lease_owner', 'is not', null)
    .where('lease_owner', '<>', owner)
    .where('run_at', '>', now)
    .executeTakeFirst();
  return Number(row?.held ?? 0);
}

/** Deletes the finished jobs of `ids` that `owner` still holds; answers the ids it deleted. */
export async function deleteClaimedJobs(
  trx: Transaction<Database>,
  ids: readonly number[],
  owner: string,
): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await trx
    .deleteFrom('jobs')
    .where('id', 'in', ids)
    .where('lease_owner', '=', owner)
    .returning('id')
    .execute();
  return rows.map((row) => Number(row.id));
}

/** A recurring job's run, kept on its row. */
export interface RecurringRun {
  at: number;
  durationMs: number;
  failed: boolean;
}

/** Every recurring job's row (those with a unique_key), by key. */
export async function findRecurringJobs(db: Kysely<Database>): Promise<JobRow[]> {
  return db.selectFrom('jobs').selectAll().where('unique_key', 'is not', null).orderBy('unique_key').execute();
}

/** Puts a job back to run at `runAt` if `owner` still holds it (with a recurring job's last run); true when it did. */
export async function rescheduleClaimedJob(
  trx: Transaction<Database>,
  id: number,
  owner: string,
  runAt: number,
  options: { undoAttempt?: boolean; lastRun?: RecurringRun } = {},
): Promise<boolean> {
  const { lastRun } = options;
  const result = await trx
    .updateTable('jobs')
    .set((eb) => ({
      run_at: runAt,
      lease_owner: null,
      ...(options.undoAttempt ? { attempts: eb('attempts', '-', 1) } : {}),
      ...(lastRun
        ? { last_run_at: lastRun.at, last_duration_ms: lastRun.durationMs, last_failed: lastRun.failed ? 1 : 0 }
        : {}),
    }))
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * When the next job of `queues` falls due after `now` (or a lease ends); null when none will.
 * Jobs due already are not asked for: a look just passed over them (their group was full), and
 * they are claimed as that group's jobs end.
 */
export async function findNextDue(
  db: Kysely<Database>,
  queues: readonly string[],
  now: number,
): Promise<number | null> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.min('run_at').as('next'))
    .where('queue', 'in', queues)
    .where('run_at', '>', now)
    .where('run_at', '<', PARKED_AT)
    .executeTakeFirst();
  return row?.next === null || row?.next === undefined ? null : Number(row.next);
}

/** Makes a group's unclaimed jobs due now (a re-enabled endpoint), or parks them. */
export async function moveGroup(trx: Transaction<Database>, groupKey: string, runAt: number): Promise<number> {
  const result = await trx
    .updateTable('jobs')
    .set({ run_at: runAt })
    .where('group_key', '=', groupKey)
    .where('lease_owner', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Deletes every job of a group (a deleted endpoint's deliveries). */
export async function deleteGroup(trx: Transaction<Database>, groupKey: string): Promise<number> {
  const result = await trx.deleteFrom('jobs').where('group_key', '=', groupKey).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Jobs of a queue waiting (parked ones left out), and when the oldest was created. */
export async function findQueueBacklog(
  db: Kysely<Database>,
  queue: string,
): Promise<{ pending: number; oldestCreatedAt: number | null }> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => [eb.fn.countAll<number>().as('pending'), eb.fn.min('created_at').as('oldest')])
    .where('queue', '=', queue)
    .where('run_at', '<', PARKED_AT)
    .executeTakeFirst();
  return {
    pending: Number(row?.pending ?? 0),
    oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
  };
}

/** A recurring job's row, by its key (for the metrics and the console: when it runs next). */
export async function findJobByKey(db: Kysely<Database>, uniqueKey: string): Promise<JobRow | undefined> {
  return db.selectFrom('jobs').selectAll().where('unique_key', '=', uniqueKey).executeTakeFirst();
}

/** Makes the recurring job `key` due at `now` unless it is leased or due already; answers how many rows moved. */
export async function makeRecurringDue(trx: Transaction<Database>, uniqueKey: string, now: number): Promise<number> {
  const result = await trx
    .updateTable('jobs')
    .set({ run_at: now })
    .where('unique_key', '=', uniqueKey)
    .where('lease_owner', 'is', null)
    .where('run_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
