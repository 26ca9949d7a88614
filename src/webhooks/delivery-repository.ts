import { type Kysely, PostgresAdapter, type Transaction } from 'kysely';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import type { Database, EventRow, WebhookEndpointRow } from '../storage/schema.js';

/** One row of the delivery log: an attempt. */
export interface NewAttemptRow {
  account_id: number;
  webhook_endpoint_id: number;
  event_id: number;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_body: string;
  created_at: number;
  /** The delivery's job: its attempts share it, and while it is pending it says when the next one is due. */
  delivery_id: number;
  /** 1 when no retry follows: the attempt succeeded, or the schedule ran out. */
  ends_delivery: 0 | 1;
  trigger: 'event' | 'resend';
}

/** The event a delivery sends and the endpoint it goes to, either missing when deleted since. */
export async function findDeliveryTarget(
  db: Kysely<Database>,
  eventId: number,
  endpointId: number,
): Promise<{ event: EventRow | undefined; endpoint: WebhookEndpointRow | undefined }> {
  // Compiled once: a delivery's statements are the job thread's hottest (see compiledQuery).
  const [[event], [endpoint]] = await Promise.all([eventQuery(db, { eventId }), endpointQuery(db, { endpointId })]);
  return { event, endpoint };
}

const eventQuery = compiledQuery((db, v: { eventId: number }) =>
  db.selectFrom('events').selectAll().where('id', '=', v.eventId),
);
const endpointQuery = compiledQuery((db, v: { endpointId: number }) =>
  db.selectFrom('webhook_endpoints').selectAll().where('id', '=', v.endpointId),
);

/**
 * The endpoint's status, its row locked until the transaction ends on PostgreSQL (so that an
 * update enabling it, under way, is waited for and seen); SQLite's writers take turns anyway.
 */
export async function findEndpointStatus(
  trx: Transaction<Database>,
  endpointId: number,
): Promise<'enabled' | 'disabled' | undefined> {
  const row = await trx
    .selectFrom('webhook_endpoints')
    .select('status')
    .where('id', '=', endpointId)
    .$if(trx.getExecutor().adapter instanceof PostgresAdapter, (query) => query.forUpdate())
    .executeTakeFirst();
  return row?.status;
}

/** Writes an attempt to the delivery log. */
export async function insertAttempt(trx: Transaction<Database>, row: NewAttemptRow): Promise<void> {
  await insertAttemptQuery(trx, row);
}

const ATTEMPT_COLUMNS = [
  'account_id',
  'webhook_endpoint_id',
  'event_id',
  'attempt',
  'status_code',
  'error',
  'duration_ms',
  'response_body',
  'created_at',
  'delivery_id',
  'ends_delivery',
  'trigger',
] as const satisfies readonly (keyof NewAttemptRow)[];

// A type, not an interface: compiledQuery's values must be a Record.
type AttemptValues = { [K in keyof NewAttemptRow]: NewAttemptRow[K] };

const insertAttemptQuery = compiledQuery((db, v: AttemptValues) =>
  db.insertInto('webhook_attempts').values(pick(v, ATTEMPT_COLUMNS)),
);

/**
 * A pending delivery dropped without an attempt (its endpoint may no longer be sent its event):
 * its last attempt logged ended it. Found through the event's attempts (indexed), not the delivery's.
 */
export async function endDelivery(trx: Transaction<Database>, eventId: number, deliveryId: number): Promise<void> {
  await trx
    .updateTable('webhook_attempts')
    .set({ ends_delivery: 1 })
    .where('id', '=', (eb) =>
      eb
        .selectFrom('webhook_attempts')
        .select((inner) => inner.fn.max('id').as('last'))
        .where('event_id', '=', eventId)
        .where('delivery_id', '=', deliveryId),
    )
    .execute();
}

/** An attempt succeeded: the endpoint is no longer failing (a write only when it was). */
export async function clearFailing(trx: Transaction<Database>, endpointId: number): Promise<void> {
  await trx
    .updateTable('webhook_endpoints')
    .set({ failing_since: null })
    .where('id', '=', endpointId)
    .where('failing_since', 'is not', null)
    .execute();
}

/**
 * An attempt failed at `at`: the endpoint is failing since then unless it already was; when it
 * has been failing since `disableAtOrBefore` or earlier it is disabled. True when it is disabled
 * now (by this, or by its owner or another attempt meanwhile).
 */
export async function markFailing(
  trx: Transaction<Database>,
  endpointId: number,
  at: number,
  disableAtOrBefore: number,
): Promise<boolean> {
  await trx
    .updateTable('webhook_endpoints')
    .set({ failing_since: at })
    .where('id', '=', endpointId)
    .where('failing_since', 'is', null)
    .execute();
  const disabled = await trx
    .updateTable('webhook_endpoints')
    .set({ status: 'disabled', updated_at: at })
    .where('id', '=', endpointId)
    .where('status', '=', 'enabled')
    .where('failing_since', '<=', disableAtOrBefore)
    .executeTakeFirst();
  if (Number(disabled.numUpdatedRows) > 0) return true;
  const row = await trx
    .selectFrom('webhook_endpoints')
    .select('status')
    .where('id', '=', endpointId)
    .executeTakeFirst();
  return row?.status === 'disabled';
}

/** How many endpoints are disabled, across every account (a metric). */
export async function countDisabledEndpoints(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'disabled')
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
