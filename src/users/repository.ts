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

/** The account's users, oldest first. */
export async function findUsersOfAccount(db: Kysely<Database>, accountId: number): Promise<UserRow[]> {
  return db.selectFrom('users').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

/** Sets the password hash of the user with this email; the user, or undefined when there is none. */
export async function updatePasswordHash(
  db: Kysely<Database>,
  emailNormalized: string,
  passwordHash: string,
): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ password_hash: passwordHash })
    .where('email_normalized', '=', emailNormalized)
    .returningAll()
    .executeTakeFirst();
}
