import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

// Secrets every server process shares (the cursor HMAC key), made by whichever process needs
// one first.

/**
 * The value of the server secret `name`, storing `candidate` first if there is none yet. A read
 * first, so that a read request needs no write (and no write lock) once the secret exists; then,
 * only if it is missing, insert and read again: when processes race on first use, one insert
 * wins and all of them read the winner's value.
 */
export async function ensureServerSecret(
  db: Kysely<Database> | Transaction<Database>,
  name: string,
  candidate: string,
  now: number,
): Promise<string> {
  const existing = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.value;
  await db
    .insertInto('server_secrets')
    .values({ name, value: candidate, created_at: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}
