import type { Insertable, Kysely } from 'kysely';
import type { Database, UserRow, UsersTable } from '../storage/schema.js';

/** Inserts the user unless the email is taken; undefined when it is (never a constraint error). */
export async function insertUserIfAbsent(
  db: Kysely<Database>,
  user: Insertable<UsersTable>,
): Promise<UserRow | undefined> {
  return db
    .insertInto('users')
    .values(user)
    .onConflict((oc) => oc.column('email_normalized').doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function findUserByEmail(db: Kysely<Database>, emailNormalized: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email_normalized', '=', emailNormalized).executeTakeFirst();
}

export async function findUserById(db: Kysely<Database>, id: number): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}
