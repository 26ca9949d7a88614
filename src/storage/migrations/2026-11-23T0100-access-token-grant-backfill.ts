import { type Kysely, sql } from 'kysely';

// Access tokens written before access_tokens.grant_id existed get the grant of the refresh token
// issued with them, so revoking a grant can find every token of it by grant_id alone.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update access_tokens
    set grant_id = (
      select r.grant_id from oauth_refresh_tokens r where r.access_token_id = access_tokens.id
    )
    where grant_id is null
      and exists (select 1 from oauth_refresh_tokens r where r.access_token_id = access_tokens.id)
  `.execute(db);
}

export async function down(): Promise<void> {
  // Nothing to undo: the column and its values stay meaningful.
}
