import type { Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

// The console's API keys and adjustments (issue 27):
// - api_keys.name: what the merchant calls the key; keys made before names existed are called
//   "Unnamed key" (the constant default fills them on both engines without a rewrite).
// - api_keys.last_used_at: when the key was last used, written at most once an hour per key
//   (never on every request: API-key authentication is the hot read path).
// - api_keys.sealed_key: the raw key of a key just made in the console, encrypted with a key
//   derived from the session cookie of the merchant who made it (which the database never
//   holds), until the page that shows it once has read and cleared it (post/redirect/get).
// - points_transactions.created_by_user_id: the console user who posted a manual adjustment;
//   null for everything else (the API's and the engine's entries).

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const time = pg ? 'bigint' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  await db.schema
    .alterTable('api_keys')
    .addColumn('name', 'text', (c) => c.notNull().defaultTo('Unnamed key'))
    .execute();
  await db.schema.alterTable('api_keys').addColumn('last_used_at', time).execute();
  await db.schema.alterTable('api_keys').addColumn('sealed_key', 'text').execute();
  await db.schema
    .alterTable('points_transactions')
    .addColumn('created_by_user_id', ref, (c) => c.references('users.id').onDelete('set null'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('points_transactions').dropColumn('created_by_user_id').execute();
  for (const column of ['sealed_key', 'last_used_at', 'name']) {
    await db.schema.alterTable('api_keys').dropColumn(column).execute();
  }
}
