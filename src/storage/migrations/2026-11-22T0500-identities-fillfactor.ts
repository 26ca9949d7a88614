import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// PostgreSQL only: create_or_update rewrites an identity row on every update. With full pages
// (fillfactor 100, the default) the new row version goes to another page, and every index of the
// table (id, account + distinct_id, customer_id) gets a new entry: in an account with a million
// identities, each such entry dirties a random index page (and writes a full-page image to the
// WAL after each checkpoint). Leaving a tenth of each page free lets the update stay on its page
// as a heap-only tuple, touching no index. Applies to pages written from now on.
// SQLite has no such setting: it rewrites the row in place.

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`alter table customer_identities set (fillfactor = 90)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`alter table customer_identities reset (fillfactor)`.execute(db);
}
