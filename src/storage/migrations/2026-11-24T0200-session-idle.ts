import type { Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

// Sessions end after a while without use (the console's idle expiry), besides their absolute
// expiry: `last_seen_at` is when the session was last used, refreshed at most once a minute.
// Existing sessions count as seen when they were made.

export async function up(db: Kysely<any>): Promise<void> {
  const big = isPostgres(db) ? 'bigint' : 'integer';
  await db.schema.alterTable('oauth_sessions').addColumn('last_seen_at', big).execute();
  await db
    .updateTable('oauth_sessions')
    .set((eb: any) => ({ last_seen_at: eb.ref('created_at') }))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('oauth_sessions').dropColumn('last_seen_at').execute();
}
