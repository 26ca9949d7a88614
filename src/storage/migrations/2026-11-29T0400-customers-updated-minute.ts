import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Issue 50: every credit updates the customer's balance and updated_at. On PostgreSQL an update
// that changes no indexed column stays on its page as a heap-only tuple (HOT), touching none of
// the table's seven indexes; the (account_id, updated_at) index of `updated_at_min` made every
// one of those updates write an entry into all seven (29 % HOT under the activities load, 99 %
// before that index). The lists now find their time through the minute it falls in, a column
// made from updated_at by the database: it changes at most once a minute however often the
// customer's points move, so the updates in between are HOT again. The list keeps the exact
// `updated_at >= t` as a filter over the minutes it reads (docs/decisions.md). Pages of the
// table keep a tenth free (fillfactor, for pages written from now on) so that the new version
// fits beside the old one. SQLite has no HOT: the column is virtual there, and its index is
// rewritten as the old one was.

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`alter table customers add column updated_minute bigint generated always as (updated_at / 60000) stored`.execute(
      db,
    );
    await sql`alter table customers set (fillfactor = 90)`.execute(db);
  } else {
    await sql`alter table customers add column updated_minute integer generated always as (updated_at / 60000) virtual`.execute(
      db,
    );
  }
  await db.schema
    .createIndex('customers_account_updated_minute')
    .on('customers')
    .columns(['account_id', 'updated_minute'])
    .execute();
  await db.schema.dropIndex('customers_account_updated').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('customers_account_updated')
    .on('customers')
    .columns(['account_id', 'updated_at'])
    .execute();
  await db.schema.dropIndex('customers_account_updated_minute').execute();
  await db.schema.alterTable('customers').dropColumn('updated_minute').execute();
  if (isPostgres(db)) await sql`alter table customers reset (fillfactor)`.execute(db);
}
