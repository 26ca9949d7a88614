import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Who made a webhook endpoint, and what it may therefore receive (issue 49; docs/decisions.md,
// "Who an endpoint belongs to"). `app_id`: the app whose access token made it, whether that token
// came from an OAuth grant or from `loyalty tokens issue` (null: the merchant's, made with an API
// key, the console or the CLI). `scopes`: the scopes of the credential that made it (narrowed
// further by any that re-pointed it), which bound what it is sent at every delivery (null: not
// narrowed). Endpoints of a grant take the grant's app and scopes, which narrowed them before;
// every other existing endpoint stays the merchant's and keeps receiving what it names.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('webhook_endpoints')
    .addColumn('app_id', isPostgres(db) ? 'bigint' : 'integer', (c) => c.references('apps.id').onDelete('cascade'))
    .execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('scopes', 'text').execute();
  await sql`
    update webhook_endpoints
    set app_id = (select g.app_id from oauth_grants g where g.id = webhook_endpoints.grant_id),
        scopes = (select g.scopes from oauth_grants g where g.id = webhook_endpoints.grant_id)
    where grant_id is not null
  `.execute(db);
  // An app's token reads its endpoints by (account_id, app_id); deleting an app finds them by it.
  await db.schema.createIndex('webhook_endpoints_app').on('webhook_endpoints').columns(['app_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_endpoints_app').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('scopes').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('app_id').execute();
}
