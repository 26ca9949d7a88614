import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AggregatorRegistry, Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { Config } from '../config.js';
import { DomainError } from '../errors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's Prometheus registry, for a metrics listener of its own (METRICS_PORT). */
    metricsRegistry: Registry;
  }
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
 * the label set stays bounded whatever clients send. With METRICS_PORT the route is not on the
 * API's port (see `startMetricsServer`); with METRICS_TOKEN it requires that bearer token.
 */
export function registerMetrics(
  app: FastifyInstance,
  config: Pick<Config, 'metricsPort' | 'metricsToken'>,
  groupCommits?: { commits: number; transactions: number },
): Metrics {
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

  if (groupCommits) {
    // SQLite's group commit (src/storage/sqlite-driver.ts): transactions / commits is the mean
    // group, how many writes shared each fsync. Counted there, read at each scrape.
    const countedBy = (name: string, help: string, count: () => number) =>
      new Counter({
        name,
        help,
        registers: [registry],
        collect() {
          this.reset();
          this.inc(count());
        },
      });
    countedBy(
      'loyalty_sqlite_commits_total',
      'Durable SQLite COMMITs, each of a group of transactions',
      () => groupCommits.commits,
    );
    countedBy(
      'loyalty_sqlite_committed_transactions_total',
      'Transactions made durable by those COMMITs',
      () => groupCommits.transactions,
    );
  }

  // The series of each method, route and status, found once: prom-client would otherwise
  // build and hash the label set on every request. Bounded as the labels are.
  const series = new Map<string, { count: () => void; observe: (seconds: number) => void }>();
  const seriesOf = (method: string, route: string, status: number) => {
    const key = `${method} ${route} ${status}`;
    let found = series.get(key);
    if (found === undefined) {
      const labels = { method, route, status: String(status) };
      const counted = requests.labels(labels);
      const timed = duration.labels(labels);
      found = { count: () => counted.inc(), observe: (seconds) => timed.observe(seconds) };
      series.set(key, found);
    }
    return found;
  };
  app.addHook('onResponse', (request, reply, done) => {
    const answered = seriesOf(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode);
    answered.count();
    answered.observe(reply.elapsedTime / 1000);
    if (reply.statusCode === 429) rateLimited.inc();
    if (reply.statusCode === 401) authFailures.inc();
    done();
  });

  app.decorate('metricsRegistry', registry);
  if (config.metricsPort === null) {
    const token = config.metricsToken;
    app.get(
      '/metrics',
      {
        schema: { hide: true },
        config: answersUnderLoad,
        onRequest: async (request, reply) => {
          if (token !== null && !bearerMatches(request.headers.authorization, token)) {
            reply.header('www-authenticate', METRICS_CHALLENGE);
            throw new DomainError('unauthorized', METRICS_REFUSED);
          }
        },
      },
      async (_request, reply) => {
        reply.type(registry.contentType);
        return registry.metrics();
      },
    );
  }

  return { registry, databaseError: () => databaseErrors.inc() };
}

const METRICS_CHALLENGE = 'Bearer realm="metrics"';
const METRICS_REFUSED = 'metrics require Authorization: Bearer <METRICS_TOKEN>';

/**
 * True when the header is `Bearer <token>`. Both sides are hashed first, so the comparison
 * takes the same time whatever the length or content of what was sent.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(match?.[1] ?? ''), digest(token)) && match !== null;
}

/** A metrics listener started by `startMetricsServer`. */
export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The listener of METRICS_PORT: `GET /metrics` (behind METRICS_TOKEN when set) and nothing
 * else, over HTTPS when the API uses TLS. `collect` gives the text: one process's registry, or,
 * in the primary of WORKERS=N, every worker's metrics aggregated (`clusterMetrics`).
 */
export async function startMetricsServer(
  config: Pick<Config, 'host' | 'metricsPort' | 'metricsToken'>,
  collect: () => Promise<string>,
  options: { tls?: { key: Buffer; cert: Buffer }; onError?: (error: unknown) => void } = {},
): Promise<MetricsServer> {
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    const requestId = randomUUID();
    const answer = (status: number, headers: Record<string, string>, body: string) => {
      response.writeHead(status, { 'x-request-id': requestId, 'cache-control': 'no-store', ...headers }).end(body);
    };
    const refuse = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
      answer(
        status,
        { 'content-type': 'application/json; charset=utf-8', ...headers },
        JSON.stringify({ error: { code, message, request_id: requestId } }),
      );
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      return refuse(404, 'not_found', 'only GET /metrics is served on this port');
    }
    if (config.metricsToken !== null && !bearerMatches(request.headers.authorization, config.metricsToken)) {
      return refuse(401, 'unauthorized', METRICS_REFUSED, { 'www-authenticate': METRICS_CHALLENGE });
    }
    collect().then(
      (text) =>
        answer(200, { 'content-type': Registry.PROMETHEUS_CONTENT_TYPE }, request.method === 'HEAD' ? '' : text),
      (error: unknown) => {
        options.onError?.(error);
        refuse(503, 'unavailable', 'metrics could not be collected; retry shortly', { 'retry-after': '1' });
      },
    );
  };
  const server: Server = options.tls ? createHttpsServer(options.tls, handler) : createHttpServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.metricsPort ?? 0, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A scraper's keep-alive connection would otherwise hold the close open.
        server.closeIdleConnections();
      }),
  };
}

/**
 * In a worker of WORKERS=N: answer the primary's requests for this process's metrics. Called
 * first without a registry, as the worker starts: the primary asks every worker it has forked,
 * and one that did not answer yet (still building its app) would time the whole scrape out.
 */
export function answerClusterScrapes(registry?: Registry): void {
  // Constructing an AggregatorRegistry installs prom-client's worker-side message listener once.
  new AggregatorRegistry();
  // Until then it answers with prom-client's global registry, which this service leaves empty.
  if (registry) AggregatorRegistry.setRegistries([registry]);
}

/** In the primary of WORKERS=N: every worker's metrics, summed (or averaged, as each metric says). */
export function clusterMetricsCollector(): () => Promise<string> {
  const aggregator = new AggregatorRegistry();
  return () => aggregator.clusterMetrics();
}
