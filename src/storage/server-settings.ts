import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

// What a running server tells the other processes on its database (the CLI above all) that is not
// a secret. One value so far: the address clients reach it at (issue 49), so that `loyalty
// export`, `users create` and `demo` print the URLs of the server that runs, not of the CLI's own
// HOST and PORT.

const PUBLIC_URL = 'public_url';

/** Records `url` as the address clients reach the server at: the last server started wins. */
export async function recordPublicUrl(db: Kysely<Database>, url: string, now: number): Promise<void> {
  await db
    .insertInto('server_settings')
    .values({ name: PUBLIC_URL, value: url, updated_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value: url, updated_at: now }))
    .execute();
}

/** Takes back `url` when its server stops, unless a server started since recorded another. */
export async function forgetPublicUrl(db: Kysely<Database>, url: string): Promise<void> {
  await db.deleteFrom('server_settings').where('name', '=', PUBLIC_URL).where('value', '=', url).execute();
}

/** The address of the server last started on this database, or null if none runs (or none stopped cleanly). */
export async function storedPublicUrl(db: Kysely<Database>): Promise<string | null> {
  const row = await db.selectFrom('server_settings').select('value').where('name', '=', PUBLIC_URL).executeTakeFirst();
  return row?.value ?? null;
}
