import type { Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

// The grant an access token descends from (null for tokens issued by `loyalty tokens issue`).
// The per-credential rate limit counts per grant: refreshing yields a new token, not a new
// allowance. Rows written before this migration keep null and count per token until they expire.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('access_tokens')
    .addColumn('grant_id', isPostgres(db) ? 'bigint' : 'integer', (c) =>
      c.references('oauth_grants.id').onDelete('cascade'),
    )
    .execute();
  // Without it, deleting a grant would scan every access token for its children.
  await db.schema.createIndex('access_tokens_grant').on('access_tokens').column('grant_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('access_tokens_grant').execute();
  await db.schema.alterTable('access_tokens').dropColumn('grant_id').execute();
}
