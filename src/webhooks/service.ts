import type { RecordedEvent } from '../events/service.js';
import type { JobsService, NewJob } from '../jobs/service.js';
import type { Work } from '../storage/unit-of-work.js';
import { findSubscribers, type Subscriber } from './repository.js';

/** The queue of webhook deliveries: one job per (event, endpoint), grouped by endpoint. */
export const WEBHOOK_DELIVERY_QUEUE = 'webhook_delivery';

/** The job group of an endpoint's deliveries (at most 10 of them in flight at once). */
export const endpointGroup = (endpointId: number) => `webhook_endpoint:${endpointId}`;

/** True when an endpoint whose `event_types` column is `eventTypes` receives events of `type`. */
export function subscribes(eventTypes: string, type: string): boolean {
  return type !== 'ping' && (eventTypes === '*' || eventTypes.includes(` ${type} `));
}

/** Webhook endpoints: where events are sent, signed, with retries and a delivery log. */
export class WebhooksService {
  constructor(private readonly jobs: JobsService) {}

  /**
   * One delivery job per (event, enabled endpoint of its account subscribed to its type), in the
   * transaction that wrote the events.
   */
  async fanOut(w: Work, events: readonly RecordedEvent[]): Promise<void> {
    const subscribers = new Map<number, Subscriber[]>();
    const deliveries: NewJob[] = [];
    for (const event of events) {
      let endpoints = subscribers.get(event.accountId);
      if (!endpoints) {
        endpoints = await findSubscribers(w.trx, event.accountId);
        subscribers.set(event.accountId, endpoints);
      }
      for (const endpoint of endpoints) {
        if (!subscribes(endpoint.eventTypes, event.type)) continue;
        deliveries.push({
          queue: WEBHOOK_DELIVERY_QUEUE,
          accountId: event.accountId,
          groupKey: endpointGroup(endpoint.id),
          subjectId: event.id,
          payload: { webhook_endpoint_id: endpoint.id },
        });
      }
    }
    await this.jobs.enqueue(w, deliveries);
  }
}
