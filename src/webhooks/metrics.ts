import type { Kysely } from 'kysely';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { JobsService } from '../jobs/service.js';
import type { Database } from '../storage/schema.js';
import type { WebhookDeliverer } from './delivery.js';
import { WEBHOOK_DELIVERY_QUEUE } from './delivery-queue.js';
import { countDisabledEndpoints } from './delivery-repository.js';

/**
 * The webhooks' figures (the events contract's "Metrics"): this process's attempts by outcome;
 * the deliveries pending across every process (parked ones, of disabled endpoints, aside) and the
 * age of the oldest; the endpoints disabled. The last three are read from the database at each
 * scrape.
 */
export function registerWebhookMetrics(
  registry: Registry,
  deps: {
    jobs: JobsService;
    db: Kysely<Database>;
    /** This process's attempts by outcome (null when it makes none: tests, the CLI). */
    attempts: () => Promise<WebhookDeliverer['stats'] | null>;
  },
): void {
  // The two gauges of the backlog share one read: a scrape collects every metric at once. A read
  // that fails (the database away) leaves the gauges as they were: the metrics must answer most
  // when the database does not.
  type Backlog = Awaited<ReturnType<JobsService['backlog']>>;
  let backlog: Promise<Backlog | null> | null = null;
  const readBacklog = () => {
    backlog ??= withinReadTime(deps.jobs.backlog(WEBHOOK_DELIVERY_QUEUE)).finally(() => {
      backlog = null;
    });
    return backlog;
  };

  new Counter({
    name: 'loyalty_webhook_attempts_total',
    help: 'Webhook delivery attempts made by this process, by outcome (succeeded: a 2xx within 10 s; failed: anything else)',
    labelNames: ['outcome'],
    registers: [registry],
    async collect() {
      this.reset();
      const stats = await deps.attempts();
      this.inc({ outcome: 'succeeded' }, stats?.succeeded ?? 0);
      this.inc({ outcome: 'failed' }, stats?.failed ?? 0);
    },
  });
  new Gauge({
    name: 'loyalty_webhook_deliveries_pending',
    help: 'Webhook deliveries not yet done, in flight or waiting for an attempt or a retry (those of disabled endpoints aside)',
    registers: [registry],
    async collect() {
      const read = await readBacklog();
      if (read) this.set(read.pending);
    },
  });
  new Gauge({
    name: 'loyalty_webhook_oldest_pending_delivery_age_seconds',
    help: 'How long ago the oldest pending webhook delivery was made (0 when none is pending)',
    registers: [registry],
    async collect() {
      const read = await readBacklog();
      if (read) this.set((read.oldestAgeMs ?? 0) / 1000);
    },
  });
  new Gauge({
    name: 'loyalty_webhook_endpoints_disabled',
    help: 'Webhook endpoints disabled (by their owner, or after 5 days of failed attempts)',
    registers: [registry],
    async collect() {
      const disabled = await withinReadTime(countDisabledEndpoints(deps.db));
      if (disabled !== null) this.set(disabled);
    },
  });
}

/** How long a scrape waits for one of these reads: a database that does not answer must not hold the metrics. */
const READ_TIME_MS = 1000;

/** The read's value, or null when it fails or takes longer than READ_TIME_MS. */
function withinReadTime<T>(read: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), READ_TIME_MS);
  });
  return Promise.race([read.catch(() => null), late]).finally(() => clearTimeout(timer));
}
