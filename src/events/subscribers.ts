import type { SelectQueryBuilder } from 'kysely';
import type { Database } from '../storage/schema.js';
import type { Work } from '../storage/unit-of-work.js';

/** An event as written: its ids, account and type (what the fan-out to endpoints needs). */
export interface RecordedEvent {
  readonly id: number;
  readonly publicId: string;
  readonly accountId: number;
  readonly type: string;
}

/** An enabled subscriber of an account's events: its id and the event types it hears. */
export interface SubscriberRow {
  id: number;
  event_types: string;
}

/**
 * Who hears of the events a unit of work records, in the transaction that writes them: the port
 * the events room declares and the webhooks room implements (webhooks/fan-out.ts), so that events
 * know nothing of webhooks.
 */
export interface EventSubscribers {
  /** The statement that reads the account's subscribers, for the events insert to run beside it. */
  subscribersQuery(w: Work, accountId: number): SelectQueryBuilder<Database, 'webhook_endpoints', SubscriberRow>;
  /**
   * Whatever each subscriber of `events` is owed, in `w`. `known`: the subscribers of the events'
   * one account, when the statement that wrote them read those too.
   */
  fanOut(w: Work, events: readonly RecordedEvent[], known?: readonly SubscriberRow[]): Promise<void>;
}
