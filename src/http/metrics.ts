import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** @fastify/under-pressure's per-route answer to overload; see `answersUnderLoad`. */
    pressureHandler?: (request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined) => void;
  }
}

/**
 * Route config for what must answer while the API sheds load: liveness (a failing liveness
 * probe gets a busy process restarted, which only adds to the overload) and metrics (overload
 * is when they are needed). The handler lets the request through.
 */
export const answersUnderLoad = { pressureHandler: () => {} };

/** The service's Prometheus metrics, in a registry of its own (one per app). */
export interface Metrics {
  registry: Registry;
  /** Counts an error that came from the database (unreachable, busy, or failing). */
  databaseError(): void;
}

/**
 * `GET /metrics` in the Prometheus text format: requests and latency by route and status,
 * rate-limit rejections, authentication failures, database errors, and the process defaults
 * (memory, CPU, event-loop lag). Routes are labelled by their pattern, never the raw URL, so
 * the label set stays bounded whatever clients send.
 */
export function registerMetrics(app: FastifyInstance): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'loyalty_' });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'loyalty_http_requests_total',
    help: 'HTTP requests answered',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'loyalty_http_request_duration_seconds',
    help: 'Time from request received to response sent',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'loyalty_rate_limit_rejections_total',
    help: 'Requests refused with 429 rate_limited',
    registers: [registry],
  });
  const authFailures = new Counter({
    name: 'loyalty_auth_failures_total',
    help: 'Requests refused with 401 unauthorized',
    registers: [registry],
  });
  const databaseErrors = new Counter({
    name: 'loyalty_database_errors_total',
    help: 'Requests that failed because of a database error',
    registers: [registry],
  });

  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    if (reply.statusCode === 429) rateLimited.inc();
    if (reply.statusCode === 401) authFailures.inc();
  });

  app.get('/metrics', { schema: { hide: true }, config: answersUnderLoad }, async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });

  return { registry, databaseError: () => databaseErrors.inc() };
}
