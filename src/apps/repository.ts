import type { Insertable, Kysely } from 'kysely';
import type { AppRow, AppsTable, Database } from '../storage/schema.js';

export async function insertApp(db: Kysely<Database>, app: Insertable<AppsTable>): Promise<AppRow> {
  return db.insertInto('apps').values(app).returningAll().executeTakeFirstOrThrow();
}

export async function findAppByClientId(db: Kysely<Database>, clientId: string): Promise<AppRow | undefined> {
  return db.selectFrom('apps').selectAll().where('client_id', '=', clientId).executeTakeFirst();
}

export async function listApps(db: Kysely<Database>): Promise<AppRow[]> {
  return db.selectFrom('apps').selectAll().orderBy('id').execute();
}
