import type { Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

// The sign-in throttle slows instead of locking (issue 27): failures are counted per client
// address and email together, and per address, and each key holds the time before which no
// attempt of it is checked (`retry_at`). The old counters (per email and per address, in fixed
// 15-minute windows) mean nothing to the new rules and lived minutes: they are deleted, not
// converted.

export async function up(db: Kysely<any>): Promise<void> {
  const time = isPostgres(db) ? 'bigint' : 'integer';
  await db.deleteFrom('oauth_sign_in_failures').execute();
  await db.schema
    .alterTable('oauth_sign_in_failures')
    .addColumn('retry_at', time, (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.deleteFrom('oauth_sign_in_failures').execute();
  await db.schema.alterTable('oauth_sign_in_failures').dropColumn('retry_at').execute();
}
