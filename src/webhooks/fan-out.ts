import type { EventSubscribers, RecordedEvent, SubscriberRow } from '../events/subscribers.js';
import type { JobsService, NewJob } from '../jobs/service.js';
import type { Work } from '../storage/unit-of-work.js';
import { endpointGroup, WEBHOOK_DELIVERY_QUEUE } from './delivery-queue.js';
import { findSubscribers, type Subscriber, subscribersOf, toSubscriber } from './repository.js';

/** True when an endpoint whose `event_types` column is `eventTypes` receives events of `type`. */
export function subscribes(eventTypes: string, type: string): boolean {
  return type !== 'ping' && (eventTypes === '*' || eventTypes.includes(` ${type} `));
}

/** The job of one delivery of an event to an endpoint (`trigger` `resend` for a resend's). */
export function deliveryJob(accountId: number, endpointId: number, eventId: number, trigger?: 'resend'): NewJob {
  return {
    queue: WEBHOOK_DELIVERY_QUEUE,
    accountId,
    groupKey: endpointGroup(endpointId),
    subjectId: eventId,
    payload: trigger === undefined ? { webhook_endpoint_id: endpointId } : { webhook_endpoint_id: endpointId, trigger },
  };
}

/** The webhooks room as the events' subscriber (the port events/subscribers.ts declares). */
export class WebhookFanOut implements EventSubscribers {
  constructor(private readonly jobs: JobsService) {}

  /** The statement that reads the account's enabled endpoints, for the events insert to run beside it. */
  subscribersQuery(w: Work, accountId: number) {
    return subscribersOf(w.trx, accountId).select(['id', 'event_types']);
  }

  /**
   * One delivery job per (event, enabled endpoint of its account subscribed to its type), in the
   * transaction that wrote the events. `known`: the enabled endpoints of the events' one account,
   * when the statement that wrote them read those too (see insertEventsBeside).
   */
  async fanOut(w: Work, events: readonly RecordedEvent[], known?: readonly SubscriberRow[]): Promise<void> {
    const subscribers = new Map<number, readonly Subscriber[]>();
    const [first] = events;
    if (known && first) subscribers.set(first.accountId, known.map(toSubscriber));
    const deliveries: NewJob[] = [];
    for (const event of events) {
      let endpoints = subscribers.get(event.accountId);
      if (!endpoints) {
        endpoints = await findSubscribers(w.trx, event.accountId);
        subscribers.set(event.accountId, endpoints);
      }
      for (const endpoint of endpoints) {
        if (!subscribes(endpoint.eventTypes, event.type)) continue;
        deliveries.push(deliveryJob(event.accountId, endpoint.id, event.id));
      }
    }
    await this.jobs.enqueue(w, deliveries);
  }
}
