import type { Kysely } from 'kysely';
import type { AccountRow, Database } from '../storage/schema.js';

export async function insertAccount(db: Kysely<Database>, name: string, now: number): Promise<AccountRow> {
  return db.insertInto('accounts').values({ name, created_at: now }).returningAll().executeTakeFirstOrThrow();
}

export async function findAccount(db: Kysely<Database>, id: number): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listAccounts(db: Kysely<Database>): Promise<AccountRow[]> {
  return db.selectFrom('accounts').selectAll().orderBy('id').execute();
}
