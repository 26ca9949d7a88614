import type { Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

// A recurring job's last run (when, how long, whether it failed), kept on its row by whichever
// process ran it: what the console's overview shows, the same on every process and node.

export async function up(db: Kysely<any>): Promise<void> {
  const big = isPostgres(db) ? 'bigint' : 'integer';
  await db.schema.alterTable('jobs').addColumn('last_run_at', big).execute();
  await db.schema.alterTable('jobs').addColumn('last_duration_ms', 'integer').execute();
  await db.schema.alterTable('jobs').addColumn('last_failed', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['last_failed', 'last_duration_ms', 'last_run_at']) {
    await db.schema.alterTable('jobs').dropColumn(column).execute();
  }
}
