import { type Kysely, PostgresAdapter, type RawBuilder, sql } from 'kysely';
import type { Database } from '../storage/schema.js';

// How a list filtered by `updated_at_min` reads its page on SQLite (issue 33). Two plans, each
// fast on one side: read the rows the time matches through (account_id, updated_at) and keep the
// newest ids, which costs what the time matches; or walk the account's ids from the newest and
// check each row's time, which costs the rows walked before a page is found (the account's size
// over what the time matches, times the page). Which is cheaper depends on how many rows the time
// matches. PostgreSQL's planner knows that from its statistics (a histogram of updated_at per
// table, kept current: storage/statistics.ts) and is left to choose. SQLite's statistics are
// sampled (analysis_limit, which also leaves out the sqlite_stat4 samples a range estimate needs),
// so it guessed "a few hundred rows" for any account and walked a million customers (seconds) to
// answer a time that matches nothing. On SQLite the service therefore counts first, reading the
// time index no further than SINCE_RANGE_ROWS entries, and tells the planner which plan to take.

/**
 * The most rows a time may match for its page to be read through the time index: counting and
 * sorting this many ids costs about a millisecond, and a time that matches more leaves a walk of
 * at most (the account's rows / this many) rows per row of the page.
 */
export const SINCE_RANGE_ROWS = 10_000;

/** The tables whose lists take `updated_at_min`, each with an (account_id, updated_at) index. */
export type SinceTable = 'customers' | 'points_transactions' | 'reward_fulfillments' | 'activities';

/**
 * `range`: the time matches at most SINCE_RANGE_ROWS of the account's rows, read through the time
 * index; `walk`: it matches more, checked on each row of the account's id order; `planner`: no
 * time, or PostgreSQL, whose planner chooses.
 */
export type SincePlan = 'planner' | 'range' | 'walk';

/** The plan of a page of `table` for `updatedAtMin`: on SQLite, one count that stops past SINCE_RANGE_ROWS. */
export async function sincePlan(
  db: Kysely<Database>,
  table: SinceTable,
  accountId: number,
  updatedAtMin: number | undefined,
): Promise<SincePlan> {
  if (updatedAtMin === undefined || db.getExecutor().adapter instanceof PostgresAdapter) return 'planner';
  const { rows } = await sql<{ matched: number | string }>`
    select count(*) as matched from (
      select 1 from ${sql.table(table)}
      where account_id = ${accountId} and updated_at >= ${updatedAtMin}
      limit ${SINCE_RANGE_ROWS + 1}
    ) as since`.execute(db);
  return Number(rows[0]?.matched ?? 0) <= SINCE_RANGE_ROWS ? 'range' : 'walk';
}

/**
 * `column` hidden from both engines' index choice (a unary plus): the walk's check of the time,
 * so that the time index is not taken for a time that matches most rows; and the range plan's id
 * order, so that its ids come from the time index and are sorted, not walked in id order.
 */
export function unindexed(column: string): RawBuilder<number> {
  return sql<number>`+${sql.ref(column)}`;
}
