import { Counter, Gauge, type Registry } from 'prom-client';
import type { QueueStats } from './runner.js';

/**
 * The job runner's figures, read from this process's runner at each scrape (`queues` shares one
 * read among the metrics of a scrape: BackgroundThread.figures): runs and failures by queue, and each queue's last run (when, how long, how it ended).
 * Empty until the runner starts (a process that serves no background work has none).
 */
export function registerJobMetrics(
  registry: Registry,
  queues: () => Promise<ReadonlyMap<string, QueueStats> | null>,
): void {
  const each = async (visit: (queue: string, stats: QueueStats) => void) => {
    for (const [queue, stats] of (await queues()) ?? []) visit(queue, stats);
  };
  new Counter({
    name: 'loyalty_job_runs_total',
    help: 'Jobs run by this process, by queue and outcome (finished, failed)',
    labelNames: ['queue', 'outcome'],
    registers: [registry],
    async collect() {
      this.reset();
      await each((queue, stats) => {
        this.inc({ queue, outcome: 'failed' }, stats.failures);
        this.inc({ queue, outcome: 'finished' }, stats.runs - stats.failures);
      });
    },
  });
  new Gauge({
    name: 'loyalty_job_last_run_timestamp_seconds',
    help: 'When this process last ran a job of the queue (Unix time)',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.reset();
      await each((queue, stats) => {
        if (stats.lastRunAt !== null) this.set({ queue }, stats.lastRunAt / 1000);
      });
    },
  });
  new Gauge({
    name: 'loyalty_job_last_duration_seconds',
    help: 'How long the last job of the queue run by this process took',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.reset();
      await each((queue, stats) => {
        if (stats.lastDurationMs !== null) this.set({ queue }, stats.lastDurationMs / 1000);
      });
    },
  });
  new Gauge({
    name: 'loyalty_job_last_outcome_failed',
    help: 'Whether the last job of the queue run by this process failed (1) or not (0)',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.reset();
      await each((queue, stats) => {
        if (stats.lastOutcome !== null) this.set({ queue }, stats.lastOutcome === 'failed' ? 1 : 0);
      });
    },
  });
}
