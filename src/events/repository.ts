import { type Kysely, type QueryCreator, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import type { Direction } from '../pagination/cursor.js';
import type { Database, EventRow } from '../storage/schema.js';
import type { SubscriberRow } from './subscribers.js';

/** A new event's row. */
export interface NewEventRow {
  public_id: string;
  account_id: number;
  type: string;
  data: string;
  created_at: number;
}

/** An inserted event's id, public id and type. */
export interface InsertedEvent {
  id: number;
  public_id: string;
  type: string;
}

/** Inserts the events in their order (ids ascending in it); answers each one's id. */
export async function insertEvents(trx: Transaction<Database>, rows: readonly NewEventRow[]): Promise<InsertedEvent[]> {
  return insertQuery(trx, rows).execute();
}

const insertQuery = (db: QueryCreator<Database>, rows: readonly NewEventRow[]) =>
  db.insertInto('events').values(rows).returning(['id', 'public_id', 'type']);

/**
 * insertEvents, with a read of the events' account's webhook subscribers (`subscribers`, the
 * webhooks room's statement) run by the same statement: a data-modifying CTE beside the
 * endpoints' rows (PostgreSQL only), so that the fan-out that follows needs no round trip of its
 * own.
 */
export async function insertEventsBeside(
  trx: Transaction<Database>,
  rows: readonly NewEventRow[],
  subscribers: SelectQueryBuilder<Database, 'webhook_endpoints', SubscriberRow>,
): Promise<{ inserted: InsertedEvent[]; subscribers: SubscriberRow[] }> {
  // An event's row has a public id; an endpoint's has its event types.
  const found = await trx
    .with('inserted', (db) => insertQuery(db, rows))
    .selectFrom('inserted')
    .select(['id', 'public_id', 'type', sql<string | null>`null`.as('event_types')])
    .unionAll(
      trx
        .selectFrom(subscribers.as('s'))
        .select(['s.id', sql<string>`null`.as('public_id'), sql<string>`null`.as('type'), 's.event_types']),
    )
    .execute();
  const inserted: InsertedEvent[] = [];
  const read: SubscriberRow[] = [];
  for (const row of found) {
    if (row.event_types === null) inserted.push(row);
    else read.push({ id: row.id, event_types: row.event_types });
  }
  return { inserted, subscribers: read };
}

/** The account's event by its public id. */
export async function findEvent(
  db: Kysely<Database>,
  accountId: number,
  publicId: string,
): Promise<EventRow | undefined> {
  return db
    .selectFrom('events')
    .selectAll()
    .where('public_id', '=', publicId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** The feed's filters: the types the caller asked for and may read (never empty), and an instant. */
export interface EventFilters {
  types: readonly string[];
  createdAtMin?: number;
}

/** Up to `rows` of the account's events of `filters` beyond `boundary` in `direction` (keysetPage's fetch). */
export async function findEventsPage(
  db: Kysely<Database>,
  accountId: number,
  filters: EventFilters,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<EventRow[]> {
  return db
    .selectFrom('events')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('type', 'in', filters.types)
    .$if(filters.createdAtMin !== undefined, (q) => q.where('created_at', '>=', filters.createdAtMin!))
    .$if(boundary !== null, (q) => q.where('id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
}

/** An event by its internal id (a delivery's subject). */
export async function findEventById(db: Kysely<Database>, id: number): Promise<EventRow | undefined> {
  return db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Deletes up to `batch` events created before `before`, oldest first (their delivery log goes
 * with them, by the foreign key); answers how many went. One short statement per call.
 */
export async function deleteEventsBefore(trx: Transaction<Database>, before: number, batch: number): Promise<number> {
  const oldest = trx
    .selectFrom('events')
    .select('id')
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(batch);
  const result = await trx.deleteFrom('events').where('id', 'in', oldest).executeTakeFirst();
  return Number(result.numDeletedRows);
}
