import { type Kysely, type RawBuilder, sql } from 'kysely';
import { isPostgres } from '../storage/dialect.js';
import type { Database } from '../storage/schema.js';
import type { Direction } from './cursor.js';

// How a list filtered by `updated_at_min` reads its page on SQLite (issue 33). Two plans, each
// fast on one side: read the rows the time matches through (account_id, updated_at) and keep the
// newest ids, which costs what the time matches; or walk the account's ids from the newest and
// check each row's time, which costs the rows walked before a page is found (the account's size
// over what the time matches, times the page). Which is cheaper depends on how many rows the time
// matches. PostgreSQL's planner knows that from its statistics (a histogram of updated_at per
// table, kept current: storage/statistics.ts) and is left to choose. SQLite's statistics are
// sampled (analysis_limit, which also leaves out the sqlite_stat4 samples a range estimate needs),
// so it guessed "a few hundred rows" for any account and walked a million customers (seconds) to
// answer a time that matches nothing. On SQLite the service therefore decides (sincePlan: short
// counts on the time index, a look at where the page starts) and tells the planner which plan to take.

/**
 * The most rows a time may match for its page to be read through the time index: counting and
 * sorting this many ids costs about a millisecond, and a time that matches more leaves a walk of
 * at most (the account's rows / this many) rows per row of the page.
 */
export const SINCE_RANGE_ROWS = 10_000;
/** Up to this many matches, the time index is read without looking further (a tenth of a millisecond). */
export const SINCE_FEW_ROWS = 1_000;
/**
 * Past SINCE_FEW_ROWS, the page's first rows this many ids long are looked at before counting on:
 * when the time matches a page of them (it matches most recent rows, as `updated_at_min=1970` does),
 * the walk finds its page at once, and the count of up to SINCE_RANGE_ROWS is not needed.
 */
export const SINCE_PROBE_ROWS = 1_000;

/** The tables whose lists take `updated_at_min`, each with an (account_id, updated_at) index but customers. */
export type SinceTable = 'customers' | 'points_transactions' | 'reward_fulfillments' | 'activities';

/**
 * Customers' time index is (account_id, updated_minute), the minute of updated_at (a column the
 * database makes, migration 2026-11-29T0400): every credit moves a customer's updated_at, and an
 * index on it made each of those updates write into every index of the table on PostgreSQL
 * instead of a heap-only one. Their condition reads the minutes, then checks the exact time.
 */
const MINUTE_INDEXED: ReadonlySet<SinceTable> = new Set(['customers']);
const MINUTE_MS = 60_000;

/**
 * `range`: the page's ids are read through the time index (the time matches at most
 * SINCE_FEW_ROWS of the account's rows, or at most SINCE_RANGE_ROWS and not where the page
 * starts); `walk`: the time is checked on each row of the account's id order (it matches a page
 * where the page starts, or more than SINCE_RANGE_ROWS); `planner`: no time, or PostgreSQL, whose
 * planner chooses.
 */
export type SincePlan = 'planner' | 'range' | 'walk';

/** Where a page starts: its direction from the boundary id (null: the first page), and its rows. */
export interface SincePage {
  direction: Direction;
  boundary: number | null;
  rows: number;
}

/**
 * The plan of a page of `table` for the list's `filters`: on SQLite, when they hold `updatedAtMin`,
 * a count that stops past SINCE_FEW_ROWS, then a look at the ids where the page starts, then a
 * count that stops past SINCE_RANGE_ROWS, each only when the one before did not decide. The look is
 * skipped for a list with other conditions (a state, a customer): a page of the time's matches
 * there says nothing of the list's, and a walk could read the whole account to fill a page of a
 * rare state.
 */
export async function sincePlan(
  db: Kysely<Database>,
  table: SinceTable,
  accountId: number,
  filters: { updatedAtMin?: number },
  page: SincePage,
): Promise<SincePlan> {
  const { updatedAtMin } = filters;
  if (updatedAtMin === undefined || isPostgres(db)) return 'planner';
  const matched = (limit: number) => countSince(db, table, accountId, updatedAtMin, limit);
  if ((await matched(SINCE_FEW_ROWS)) <= SINCE_FEW_ROWS) return 'range';
  const narrowed = Object.entries(filters).some(([name, value]) => name !== 'updatedAtMin' && value !== undefined);
  if (!narrowed && (await pageNear(db, table, accountId, updatedAtMin, page))) return 'walk';
  return (await matched(SINCE_RANGE_ROWS)) <= SINCE_RANGE_ROWS ? 'range' : 'walk';
}

/** How many of the account's rows the time matches, counted no further than `limit` + 1 (the time index). */
async function countSince(
  db: Kysely<Database>,
  table: SinceTable,
  accountId: number,
  updatedAtMin: number,
  limit: number,
): Promise<number> {
  const { rows } = await sql<{ matched: number | string }>`
    select count(*) as matched from (
      select 1 from ${sql.table(table)}
      where account_id = ${accountId} and ${sinceCondition(table, 'range', 'updated_at', updatedAtMin)}
      limit ${limit + 1}
    ) as since`.execute(db);
  return Number(rows[0]?.matched ?? 0);
}

/** Whether the time matches a page's rows among the SINCE_PROBE_ROWS ids where the page starts. */
async function pageNear(
  db: Kysely<Database>,
  table: SinceTable,
  accountId: number,
  updatedAtMin: number,
  page: SincePage,
): Promise<boolean> {
  const next = page.direction === 'next';
  const beyond =
    page.boundary === null ? sql`` : next ? sql`and id < ${page.boundary}` : sql`and id > ${page.boundary}`;
  const { rows } = await sql<{ matched: number | string }>`
    select count(*) as matched from (
      select 1 from (
        select updated_at from ${sql.table(table)}
        where account_id = ${accountId} ${beyond}
        order by id ${next ? sql`desc` : sql`asc`}
        limit ${SINCE_PROBE_ROWS}
      ) as near
      where updated_at >= ${updatedAtMin}
      limit ${page.rows}
    ) as since`.execute(db);
  return Number(rows[0]?.matched ?? 0) >= page.rows;
}

/**
 * `column` hidden from both engines' index choice (a unary plus): the walk's check of the time,
 * so that the time index is not taken for a time that matches most rows; and the range plan's id
 * order, so that its ids come from the time index and are sorted, not walked in id order.
 */
export function unindexed(column: string): RawBuilder<number> {
  return sql<number>`+${sql.ref(column)}`;
}

/** The time column of a list's condition as `plan` reads it: kept off the index on a walk. */
export function sinceRef(plan: SincePlan, column: string): RawBuilder<number> {
  return plan === 'walk' ? unindexed(column) : sql<number>`${sql.ref(column)}`;
}

/**
 * A list's `column >= updatedAtMin` (`column` is the table's updated_at, qualified or not) as
 * `plan` reads it: on a table whose time index holds the minute, the minutes from the time's on
 * (what the index finds), then the exact time over them.
 */
export function sinceCondition(
  table: SinceTable,
  plan: SincePlan,
  column: string,
  updatedAtMin: number,
): RawBuilder<boolean> {
  const exact = sql<boolean>`${sinceRef(plan, column)} >= ${updatedAtMin}`;
  if (!MINUTE_INDEXED.has(table)) return exact;
  const minute = column.replace(/updated_at$/, 'updated_minute');
  return sql<boolean>`${sinceRef(plan, minute)} >= ${Math.floor(updatedAtMin / MINUTE_MS)} and ${exact}`;
}
