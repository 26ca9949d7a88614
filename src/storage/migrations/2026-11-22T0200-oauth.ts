import { type Kysely, PostgresAdapter } from 'kysely';

// Merchant users and the OAuth authorization server (issue 6). Typed Kysely<any> and free of app
// imports, like every migration. Secrets (session ids, codes, refresh tokens) are stored only as
// SHA-256 hashes; passwords only as scrypt hashes.

export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const time = pg ? 'bigint' : 'integer';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  // A user belongs to one account; the normalised (trimmed, lower-cased) email is unique overall,
  // so signing in needs no account name.
  await db.schema
    .createTable('users')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_normalized', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('users_account').on('users').column('account_id').execute();

  // Browser sessions of the sign-in and consent pages; user_id is null until the merchant signs in.
  await db.schema
    .createTable('oauth_sessions')
    .addColumn('id', id, primaryId)
    .addColumn('session_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', ref, (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('expires_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_sessions_expires').on('oauth_sessions').column('expires_at').execute();

  // Failed sign-ins per email (hashed) and per client address, counted in a fixed window.
  await db.schema
    .createTable('oauth_sign_in_failures')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('window_started_at', time, (c) => c.notNull())
    .execute();

  // One approval of an app by a merchant: the code and every token descended from it. Revoking
  // the grant revokes the whole chain (code reuse, refresh token reuse, revocation).
  await db.schema
    .createTable('oauth_grants')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('app_id', ref, (c) => c.notNull().references('apps.id').onDelete('cascade'))
    .addColumn('user_id', ref, (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('revoked_at', time)
    .execute();

  await db.schema
    .createTable('oauth_codes')
    .addColumn('id', id, primaryId)
    .addColumn('code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('grant_id', ref, (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('code_challenge', 'text')
    .addColumn('code_challenge_method', 'text')
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('expires_at', time, (c) => c.notNull())
    .addColumn('used_at', time)
    .execute();
  await db.schema.createIndex('oauth_codes_grant').on('oauth_codes').column('grant_id').execute();
  await db.schema.createIndex('oauth_codes_expires').on('oauth_codes').column('expires_at').execute();

  // Each refresh token was issued together with one access token (access_token_id), so the
  // chain of a grant reaches every access token it produced.
  await db.schema
    .createTable('oauth_refresh_tokens')
    .addColumn('id', id, primaryId)
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('grant_id', ref, (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
    .addColumn('access_token_id', ref, (c) => c.references('access_tokens.id').onDelete('set null'))
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('expires_at', time, (c) => c.notNull())
    .addColumn('revoked_at', time)
    .execute();
  await db.schema.createIndex('oauth_refresh_tokens_grant').on('oauth_refresh_tokens').column('grant_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'oauth_refresh_tokens',
    'oauth_codes',
    'oauth_grants',
    'oauth_sign_in_failures',
    'oauth_sessions',
    'users',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
