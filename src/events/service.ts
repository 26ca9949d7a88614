import type { Kysely } from 'kysely';
import type { Scope } from '../auth/scopes.js';
import { randomBase62 } from '../auth/secrets.js';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import { invalidParameter, notFound } from '../errors.js';
import type { JobHandler } from '../jobs/service.js';
import { Cursors, keysetPage, type Page } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import { isPostgres } from '../storage/dialect.js';
import type { Database, EventRow } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { parseTime } from '../time.js';
import { EVENT_TYPE_NAMES, type EventType, isEventType, readsEventType } from './catalog.js';
import {
  deleteEventsBefore,
  type EventFilters,
  findEvent,
  findEventById,
  findEventsPage,
  insertEvents,
  insertEventsBeside,
  type NewEventRow,
} from './repository.js';
import type { EventsQuery } from './schemas.js';
import type { EventSubscribers, RecordedEvent } from './subscribers.js';

/** A new event id: `evt_` and 24 random base62 characters (about 143 bits). */
export function newEventId(): string {
  return `evt_${randomBase62(24)}`;
}

/** Events deleted per statement by retention: each batch a short transaction of its own. */
const RETENTION_BATCH = 1000;
/** How long one retention run goes on before it lets other jobs run (it continues at once after). */
const RETENTION_RUN_MS = 5000;
/** How often retention runs. */
const RETENTION_EVERY_MS = 60 * 60 * 1000;

const EVENTS_CURSOR = { resource: 'events', filtered: true };

/** The event types a credential holding `scopes` may read (catalog order): each type's scope (catalog.ts) granted. */
export function readableEventTypes(scopes: readonly Scope[]): EventType[] {
  return EVENT_TYPE_NAMES.filter((type) => readsEventType(scopes, type));
}

/** The job that deletes events past retention. */
export const EVENTS_RETENTION_QUEUE = 'events.retention';

/**
 * The outbox: services record the events of a change in the change's unit of work; they are
 * written in its transaction, in one statement, just before it commits (so a rolled-back change
 * has none), and the webhook endpoints subscribed to them get a delivery each in the same
 * transaction.
 */
export class EventsService {
  /** The events each unit of work recorded, not yet written. */
  private readonly pending = new WeakMap<Work, NewEventRow[]>();
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly retentionDays: number,
    /** Who hears of the events recorded (the webhooks room, through the port events declares). */
    private readonly subscribers: EventSubscribers,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /**
   * Records an event of the work's change: `data` is the resource exactly as the API shows it
   * now (serialised at once, so later changes to the object do not alter it). Written with the
   * work's other events when it finishes, in the order recorded.
   */
  record(w: Work, accountId: number, type: EventType, data: object): void {
    let events = this.pending.get(w);
    if (!events) {
      const recorded: NewEventRow[] = [];
      events = recorded;
      this.pending.set(w, recorded);
      w.beforeCommit(() => this.write(w, recorded));
    }
    events.push({
      public_id: newEventId(),
      account_id: accountId,
      type,
      data: JSON.stringify(data),
      created_at: w.now,
    });
  }

  /** Writes one event at once, with no delivery to any endpoint (a test event, sent to one by the caller). */
  async recordAlone(w: Work, accountId: number, type: EventType, data: object): Promise<RecordedEvent> {
    const row = { public_id: newEventId(), account_id: accountId, type, data: JSON.stringify(data), created_at: w.now };
    const [inserted] = await insertEvents(w.trx, [row]);
    return { id: inserted!.id, publicId: row.public_id, accountId, type };
  }

  /** The account's event by its public id (`evt_…`). */
  find(accountId: number, publicId: string): Promise<EventRow | undefined> {
    return findEvent(this.db, accountId, publicId);
  }

  /**
   * The feed's event `publicId` (`evt_…`), if the account has it and `scopes` can read its type;
   * else `404`, the same answer as for an id that does not exist (nothing tells them apart).
   */
  async get(accountId: number, scopes: readonly Scope[], publicId: string): Promise<EventRow> {
    const event = await findEvent(this.db, accountId, publicId);
    if (!event || !readsEventType(scopes, event.type)) {
      throw notFound(`event ${publicId} does not exist`);
    }
    return event;
  }

  /**
   * One page of the feed, newest first (id descending): the types asked for (all by default)
   * narrowed to those `scopes` can read. The cursor is bound to that effective filter, so it is
   * refused with other filters, and by a credential that reads other types.
   */
  async page(accountId: number, scopes: readonly Scope[], query: EventsQuery): Promise<Page<EventRow>> {
    const asked = query.type === undefined ? undefined : parseTypes(query.type);
    const types = readableEventTypes(scopes).filter((type) => asked === undefined || asked.has(type));
    const filters: EventFilters = {
      types,
      ...(query.created_at_min === undefined
        ? {}
        : { createdAtMin: parseTime(query.created_at_min, 'created_at_min') }),
    };
    return keysetPage({
      codec: await this.cursors.codec(EVENTS_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      filters,
      // No type left to read: nothing to ask the database (and `in ()` is no SQL).
      fetch: async (direction, boundary, rows) =>
        types.length === 0 ? [] : findEventsPage(this.db, accountId, filters, direction, boundary, rows),
    });
  }

  /** An event by its internal id (a delivery's). */
  findById(id: number): Promise<EventRow | undefined> {
    return findEventById(this.db, id);
  }

  /** Deletes events older than the retention, in short batches, for at most `budgetMs`; true when none is left. */
  async deleteExpired(budgetMs = RETENTION_RUN_MS): Promise<{ deleted: number; done: boolean }> {
    const before = this.clock.now() - this.retentionDays * 24 * 60 * 60 * 1000;
    const started = performance.now();
    let deleted = 0;
    for (;;) {
      const batch = await this.uow.run((w) => deleteEventsBefore(w.trx, before, RETENTION_BATCH));
      deleted += batch;
      if (batch < RETENTION_BATCH) return { deleted, done: true };
      if (performance.now() - started > budgetMs) return { deleted, done: false };
    }
  }

  /** The recurring job of retention: every hour, or at once again while a backlog remains. */
  retentionJob(): JobHandler {
    return {
      queue: EVENTS_RETENTION_QUEUE,
      schedule: { key: EVENTS_RETENTION_QUEUE },
      run: async () => {
        const { done } = await this.deleteExpired();
        return { runAt: done ? this.clock.now() + RETENTION_EVERY_MS : this.clock.now() };
      },
    };
  }

  private async write(w: Work, events: NewEventRow[]): Promise<void> {
    if (events.length === 0) return;
    // On PostgreSQL one account's events (a write's always are) are inserted beside the read of
    // that account's webhook subscribers, a round trip fewer; SQLite has none to save.
    const accountId = events[0]!.account_id;
    const { inserted, subscribers } =
      isPostgres(w.trx) && events.every((event) => event.account_id === accountId)
        ? await insertEventsBeside(w.trx, events, this.subscribers.subscribersQuery(w, accountId))
        : { inserted: await insertEvents(w.trx, events), subscribers: undefined };
    // RETURNING's order is not promised on SQLite: each row is matched by its public id.
    const accounts = new Map(events.map((event) => [event.public_id, event.account_id]));
    const recorded = inserted
      .map((row) => ({
        id: Number(row.id),
        publicId: row.public_id,
        accountId: accounts.get(row.public_id)!,
        type: row.type,
      }))
      .sort((a, b) => a.id - b.id);
    await this.subscribers.fanOut(w, recorded, subscribers);
  }
}

/** The `type` filter's names (comma-separated), each of the catalog; else `400` naming `type`. */
function parseTypes(list: string): Set<EventType> {
  const names = list.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !isEventType(name));
  if (unknown.length > 0) {
    throw invalidParameter(
      'type',
      `has unknown event type ${unknown.map((name) => JSON.stringify(name)).join(', ')}; known types: ${EVENT_TYPE_NAMES.join(', ')}`,
    );
  }
  return new Set(names as EventType[]);
}

/**
 * An event's JSON, as the feed shows it and a webhook sends it: `data` is spliced in as stored,
 * never parsed and written again, so every delivery of an event has the same bytes.
 */
export function eventJson(row: EventRow): string {
  return (
    `{"id":${JSON.stringify(row.public_id)},"type":${JSON.stringify(row.type)},"account_id":${Number(row.account_id)},` +
    `"created_at":${JSON.stringify(isoTime(Number(row.created_at)))},"data":${row.data}}`
  );
}
