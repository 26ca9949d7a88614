import type { Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

// What a running server tells the other processes on its database that is not a secret: its public
// address (issue 49), so that the CLI prints referral URLs and sign-in addresses of the server
// that really runs, not of its own HOST and PORT.

export async function up(db: Kysely<any>): Promise<void> {
  const time = isPostgres(db) ? 'bigint' : 'integer';
  await db.schema
    .createTable('server_settings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('server_settings').execute();
}
