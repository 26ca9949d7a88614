import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';
import type { Database } from './schema.js';
import type { UnitOfWork } from './unit-of-work.js';

// The query planner's statistics, kept current so that a real install gets the plans the bench
// measured (docs/operations.md, "Query planner statistics"): a list filtered by a time that
// matches a few rows reads them by index, one that matches most walks ids; an import's lookups
// of a batch's emails stay index probes as its tables grow from nothing to millions of rows.
// Without them a planner that last saw a table nearly empty reads a whole account to find 200 rows.

/**
 * A table is analyzed again once this share of its rows changed since the last time (and at least
 * ANALYZE_MIN_CHANGES): autovacuum's own default threshold.
 */
const ANALYZE_SHARE = 0.1;
const ANALYZE_MIN_CHANGES = 50;

/**
 * Refreshes the statistics of the tables that changed enough since they were last gathered; the
 * tables it analyzed (SQLite does not say). SQLite gathers none by itself: `pragma optimize` runs
 * ANALYZE where the size changed enough, on a bounded sample (analysis_limit). On PostgreSQL,
 * autovacuum does the same when it is on; this does it when it is off (as on some CI servers) or
 * has not come round yet, in the current schema. Cheap when nothing changed: safe to run often.
 */
export async function refreshStatistics(db: Kysely<Database>, uow: UnitOfWork): Promise<string[]> {
  if (!isPostgres(db)) {
    // In a unit of work, so on the writer in its turn: SQLite calls the pragma read-only, which
    // alone would send it to the reader, and its ANALYZE writes. 0x10002: every table, not only
    // those this connection used.
    await uow.run((w) => sql`pragma optimize = 0x10002`.execute(w.trx));
    return [];
  }
  const { rows } = await sql<{ name: string }>`
    select relname as name from pg_stat_user_tables
    where schemaname = current_schema()
      and n_mod_since_analyze > ${sql.lit(ANALYZE_MIN_CHANGES)} + ${sql.lit(ANALYZE_SHARE)} * n_live_tup`.execute(db);
  for (const { name } of rows) await sql`analyze ${sql.table(name)}`.execute(db);
  return rows.map((row) => row.name);
}
