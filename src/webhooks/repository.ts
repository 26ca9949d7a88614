import type { Kysely, Transaction } from 'kysely';
import type { Direction } from '../pagination/cursor.js';
import { isPostgres } from '../storage/dialect.js';
import type { Database, WebhookEndpointRow } from '../storage/schema.js';

/** An enabled endpoint, as the fan-out matches events against it. */
export interface Subscriber {
  id: number;
  /** `*`, or ` type type … `. */
  eventTypes: string;
}

/** The account's enabled endpoints (at most 20 per account): the rows the fan-out matches events against. */
export function subscribersOf(db: Kysely<Database>, accountId: number) {
  return db.selectFrom('webhook_endpoints').where('account_id', '=', accountId).where('status', '=', 'enabled');
}

export const toSubscriber = (row: { id: number | string; event_types: string }): Subscriber => ({
  id: Number(row.id),
  eventTypes: row.event_types,
});

/** The account's enabled endpoints, in the work's transaction. */
export async function findSubscribers(trx: Transaction<Database>, accountId: number): Promise<Subscriber[]> {
  const rows = await subscribersOf(trx, accountId).select(['id', 'event_types']).execute();
  return rows.map(toSubscriber);
}

/** An endpoint's row, its numbers as numbers. */
export type EndpointRow = WebhookEndpointRow;

/**
 * Which endpoints a reader sees: the merchant (`appId` null) every one of the account; an app's
 * token only those made under the same authorization of the same app: its OAuth grant, or for a
 * token `loyalty tokens issue` made (no grant), the app's endpoints made by such tokens.
 */
export interface EndpointViewer {
  accountId: number;
  appId: number | null;
  grantId: number | null;
}

function endpointsOf(db: Kysely<Database>, viewer: EndpointViewer) {
  return db
    .selectFrom('webhook_endpoints as e')
    .selectAll('e')
    .where('e.account_id', '=', viewer.accountId)
    .$if(viewer.appId !== null, (q) =>
      q.where('e.app_id', '=', viewer.appId!).where('e.grant_id', viewer.grantId === null ? 'is' : '=', viewer.grantId),
    );
}

/** The endpoint `id` if the viewer sees it. */
export async function findEndpoint(
  db: Kysely<Database>,
  viewer: EndpointViewer,
  id: number,
): Promise<EndpointRow | undefined> {
  const row = await endpointsOf(db, viewer).where('e.id', '=', id).executeTakeFirst();
  return row && normalise(row);
}

/** One keyset page of the endpoints the viewer sees (see keysetPage). */
export async function findEndpointsPage(
  db: Kysely<Database>,
  viewer: EndpointViewer,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<EndpointRow[]> {
  const found = await endpointsOf(db, viewer)
    .$if(boundary !== null, (q) => q.where('e.id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('e.id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
  return found.map(normalise);
}

/**
 * Serialises the creations of one account's endpoints until the transaction ends, so that the
 * count of the limit is not raced past. PostgreSQL: the account row, `FOR NO KEY UPDATE`, which
 * leaves the foreign-key checks of other inserts (`FOR KEY SHARE`) free. SQLite transactions
 * already hold the database's write lock.
 */
export async function lockAccountEndpoints(trx: Transaction<Database>, accountId: number): Promise<void> {
  if (!isPostgres(trx)) return;
  await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forNoKeyUpdate().execute();
}

/** How many endpoints the account has, and how many of them are disabled. */
export async function countEndpoints(
  db: Kysely<Database>,
  accountId: number,
): Promise<{ endpoints: number; disabled: number }> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => [
      eb.fn.countAll<number | string | bigint>().as('endpoints'),
      eb.fn.count<number | string | bigint>(eb.case().when('status', '=', 'disabled').then(1).end()).as('disabled'),
    ])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return { endpoints: Number(row?.endpoints ?? 0), disabled: Number(row?.disabled ?? 0) };
}

export type NewEndpointRow = Omit<WebhookEndpointRow, 'id'>;

export async function insertEndpoint(trx: Transaction<Database>, row: NewEndpointRow): Promise<number> {
  const inserted = await trx.insertInto('webhook_endpoints').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(inserted.id);
}

export type EndpointChanges = Partial<
  Pick<
    WebhookEndpointRow,
    | 'url'
    | 'description'
    | 'enabled_events'
    | 'event_types'
    | 'scopes'
    | 'status'
    | 'secret'
    | 'previous_secret'
    | 'previous_secret_expires_at'
    | 'failing_since'
    | 'updated_at'
  >
>;

/** Changes the account's endpoint; false when it has no such endpoint (any more). */
export async function updateEndpoint(
  trx: Transaction<Database>,
  accountId: number,
  id: number,
  changes: EndpointChanges,
): Promise<boolean> {
  const result = await trx
    .updateTable('webhook_endpoints')
    .set(changes)
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Deletes the account's endpoint (its delivery log goes with it); false when there was none. */
export async function deleteEndpoint(trx: Transaction<Database>, accountId: number, id: number): Promise<boolean> {
  const result = await trx
    .deleteFrom('webhook_endpoints')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Deletes a grant's endpoints; answers their ids. */
export async function deleteGrantEndpoints(trx: Transaction<Database>, grantId: number): Promise<number[]> {
  const rows = await trx.deleteFrom('webhook_endpoints').where('grant_id', '=', grantId).returning('id').execute();
  return rows.map((row) => Number(row.id));
}

/** A row of the delivery log, with its event's public id and type. */
export interface AttemptRow {
  id: number;
  event_public_id: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_body: string;
  created_at: number;
  trigger: 'event' | 'resend';
  /** No retry followed it: it succeeded, or the schedule ran out. */
  ends_delivery: boolean;
  /** Its delivery's job while the delivery is pending: when it runs next, its claims so far, whether it is claimed. */
  delivery: { runAt: number; attempts: number; leased: boolean } | null;
}

/**
 * One keyset page of an endpoint's delivery log (of one event, when `eventId` is given), each
 * attempt with its delivery's job if still pending (by its primary key: the job's run_at is the
 * one record of when the delivery is tried next).
 */
export async function findAttemptsPage(
  db: Kysely<Database>,
  accountId: number,
  endpointId: number,
  eventId: number | null,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<AttemptRow[]> {
  const found = await db
    .selectFrom('webhook_attempts as a')
    .innerJoin('events as ev', 'ev.id', 'a.event_id')
    .leftJoin('jobs as j', 'j.id', 'a.delivery_id')
    .select([
      'a.id',
      'ev.public_id as event_public_id',
      'ev.type as event_type',
      'a.attempt',
      'a.status_code',
      'a.error',
      'a.duration_ms',
      'a.response_body',
      'a.created_at',
      'a.trigger',
      'a.ends_delivery',
      'j.id as job_id',
      'j.run_at as job_run_at',
      'j.attempts as job_attempts',
      'j.lease_owner as job_lease_owner',
    ])
    .where('a.account_id', '=', accountId)
    .where('a.webhook_endpoint_id', '=', endpointId)
    .$if(eventId !== null, (q) => q.where('a.event_id', '=', eventId!))
    .$if(boundary !== null, (q) => q.where('a.id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('a.id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
  return found.map(({ job_id, job_run_at, job_attempts, job_lease_owner, ...row }) => ({
    ...row,
    id: Number(row.id),
    attempt: Number(row.attempt),
    status_code: row.status_code === null ? null : Number(row.status_code),
    duration_ms: Number(row.duration_ms),
    created_at: Number(row.created_at),
    ends_delivery: Number(row.ends_delivery) === 1,
    delivery:
      job_id === null
        ? null
        : { runAt: Number(job_run_at), attempts: Number(job_attempts), leased: job_lease_owner !== null },
  }));
}

/** PostgreSQL answers bigint columns as strings: every number of the row as a number. */
function normalise(row: WebhookEndpointRow): EndpointRow {
  return {
    ...row,
    id: Number(row.id),
    account_id: Number(row.account_id),
    grant_id: row.grant_id === null ? null : Number(row.grant_id),
    app_id: row.app_id === null ? null : Number(row.app_id),
    previous_secret_expires_at: row.previous_secret_expires_at === null ? null : Number(row.previous_secret_expires_at),
    failing_since: row.failing_since === null ? null : Number(row.failing_since),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}
