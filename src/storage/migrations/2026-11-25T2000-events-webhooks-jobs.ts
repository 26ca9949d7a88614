import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Events, webhook endpoints, the delivery log and the job runner (docs/webhooks.md, docs/jobs.md).
// An event is written in the transaction of the change it tells of (the outbox); the same
// statement's neighbour inserts one `webhook_delivery` job per endpoint subscribed to its type.

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  await db.schema
    .createTable('events')
    .addColumn('id', id, primaryId)
    // `evt_` and random base62: the id integrators see (webhook-id), unique everywhere.
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    // The event's `data`, as JSON text, exactly as the API showed the resource at the change.
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', big, (c) => c.notNull())
    .execute();
  // The feed: where account_id = ? [and type in (…)] and id < ? order by id desc.
  await db.schema.createIndex('events_page').on('events').columns(['account_id', 'id']).execute();
  // Retention: the oldest first, in batches.
  await db.schema.createIndex('events_created').on('events').columns(['created_at']).execute();

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    // The app grant that made it (through an OAuth token); deleted with the grant's revocation.
    .addColumn('grant_id', ref, (c) => c.references('oauth_grants.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    // JSON array, as the endpoint was given it: types, or ["*"].
    .addColumn('enabled_events', 'text', (c) => c.notNull())
    // What it receives, as the fan-out matches it: `*`, or ` type type … ` (spaces around each),
    // the enabled events narrowed to what a grant's scopes can read.
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('enabled', 'disabled')`))
    // The signing secret, sealed (AES-256-GCM, key derived from the server's secret); never clear.
    .addColumn('secret', 'text', (c) => c.notNull())
    // The secret before the last rotation, which keeps signing until previous_secret_expires_at.
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', big)
    // When its attempts began to fail without a success since (null: the last one succeeded).
    .addColumn('failing_since', big)
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_endpoints_account')
    .on('webhook_endpoints')
    .columns(['account_id', 'id'])
    .execute();
  await db.schema.createIndex('webhook_endpoints_grant').on('webhook_endpoints').column('grant_id').execute();

  // The delivery log: one row per attempt. Kept as long as its event.
  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('webhook_endpoint_id', ref, (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('event_id', ref, (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_body', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', big, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_attempts_endpoint')
    .on('webhook_attempts')
    .columns(['webhook_endpoint_id', 'id'])
    .execute();
  await db.schema.createIndex('webhook_attempts_event').on('webhook_attempts').columns(['event_id']).execute();

  // The job runner's work (src/jobs/): due when run_at <= now. A claim moves run_at to the end of
  // its lease and names the claimer; a crashed claimer's job is due again when the lease ends.
  await db.schema
    .createTable('jobs')
    .addColumn('id', id, primaryId)
    .addColumn('queue', 'text', (c) => c.notNull())
    .addColumn('account_id', ref, (c) => c.references('accounts.id').onDelete('cascade'))
    // Jobs of one group (one webhook endpoint) have at most a few in flight at once.
    .addColumn('group_key', 'text')
    // What the job is about (a delivery: the event's id).
    .addColumn('subject_id', ref)
    .addColumn('payload', 'text', (c) => c.notNull().defaultTo('{}'))
    // At most one job with this key (a schedule: one row per recurring job).
    .addColumn('unique_key', 'text', (c) => c.unique())
    .addColumn('run_at', big, (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('created_at', big, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_due').on('jobs').columns(['run_at', 'id']).execute();
  await db.schema.createIndex('jobs_group').on('jobs').columns(['group_key', 'run_at']).execute();
  await db.schema.createIndex('jobs_queue').on('jobs').columns(['queue', 'run_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('jobs').execute();
  await db.schema.dropTable('webhook_attempts').execute();
  await db.schema.dropTable('webhook_endpoints').execute();
  await db.schema.dropTable('events').execute();
}
