import rateLimit from '@fastify/rate-limit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import underPressure from '@fastify/under-pressure';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import type { Redis } from 'ioredis';
import { Type } from 'typebox';
import type { BackgroundThread } from './background.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { DomainError } from './errors.js';
import { registerAuth } from './http/auth.js';
import { answerClientError, answerFrameworkError, registerErrorHandling, requireHost } from './http/errors.js';
import { homeRoutes } from './http/home.js';
import { parseJsonBody, takesEmptyBody } from './http/json-body.js';
import { SAFE_LOGGING, serializeRequest } from './http/log-redaction.js';
import { answersUnderLoad, registerMetrics } from './http/metrics.js';
import { registerOpenApi } from './http/openapi.js';
import { requestId } from './http/request-id.js';
import { errorRef } from './http/schemas.js';
import { registerSendBatching } from './http/send-batching.js';
import { registerStrictInput } from './http/strict-input.js';
import { registerTransportRules } from './http/transport.js';
import { registerValidators } from './http/validation.js';
import { registerJobMetrics } from './jobs/metrics.js';
import { rooms } from './rooms.js';
import { createServices, type Services, serviceOptions } from './services.js';
import { type Db, isReachable } from './storage/db.js';
import { VERSION } from './version.js';
import { registerWebhookMetrics } from './webhooks/metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    /** Starts answering new requests `503 unavailable` ahead of close(), with the port still open. */
    refuseNewRequests(): void;
    /** The process's background work, once the server started it (null in tests and the CLI). */
    background: BackgroundThread | null;
  }
}

export interface AppOptions {
  config: Config;
  db: Db;
  clock?: Clock;
  /** Fastify's logger option; tests pass false or a stream. */
  logger?: FastifyServerOptions['logger'];
  /** Shared Redis for the rate-limit counters of several processes; absent: in-process counters. */
  redis?: Redis | null;
  /** Extra Fastify server options (server.ts passes the HTTPS ones). */
  server?: Partial<FastifyServerOptions> & { https?: object };
}

/** Maximum request body: the contract's 64 KiB. */
export const BODY_LIMIT = 64 * 1024;

/** Builds the whole app (plugins, routes, error handling) without listening. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, db } = options;
  // Node enforces these deadlines only when it checks its connections (every 30 s by default: a
  // 1 s timeout would cut a slow client after up to 31 s), and when headersTimeout (60 s by
  // default) exceeds requestTimeout it swaps the two, so a slow body could take 60 s. Both
  // deadlines are requestTimeout, checked every second (every quarter of it when shorter).
  const timeoutChecks = {
    requestTimeout: config.requestTimeoutMs,
    headersTimeout: config.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, Math.ceil(config.requestTimeoutMs / 4)),
    // Refused by the requireHost hook instead, with the contract's body.
    requireHostHeader: false,
  };
  const app = Fastify({
    logger: options.logger ?? {
      level: config.logLevel,
      ...SAFE_LOGGING,
      serializers: { req: serializeRequest },
    },
    genReqId: requestId,
    bodyLimit: BODY_LIMIT,
    trustProxy: config.trustProxy,
    // Closing is answered by our own hook, with the contract's body.
    return503OnClosing: false,
    // Errors before routing (a path that does not decode) get the contract's body too.
    frameworkErrors: answerFrameworkError,
    // Requests Node's parser refuses get the contract's body too.
    clientErrorHandler: answerClientError,
    // A slow client cannot hold a connection: the whole request (headers and body) must arrive in time.
    requestTimeout: config.requestTimeoutMs,
    http: timeoutChecks,
    ...options.server,
    ...(options.server?.https ? { https: { ...timeoutChecks, ...options.server.https } } : {}),
  }).withTypeProvider<TypeBoxTypeProvider>();

  const services = createServices(db, serviceOptions(config, options.clock ?? systemClock));
  app.decorate('services', services);
  app.decorate('background', null);

  app.server.maxConnections = config.maxConnections;
  // A client may half-close (end its side) after sending a request and still wait for the
  // answer. Node's default aborts such a request and ends the socket unanswered when the answer
  // is not ready at once (a PostgreSQL round trip); with this, the answer is sent, then the socket
  // ends. Timeouts still bound how long a connection stays open.
  (app.server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  const metrics = registerMetrics(app, config, db.sqlite?.stats);
  const background = async () => (app.background ? await app.background.figures() : null);
  registerJobMetrics(metrics.registry, async () => (await background())?.queues ?? null);
  registerWebhookMetrics(metrics.registry, {
    jobs: services.jobs,
    db: db.kysely,
    // Attempts are made by this process's job thread: none without one (tests, the CLI).
    attempts: async () => (await background())?.webhookAttempts ?? null,
  });
  // The deliveries' kept-alive sockets go with the app.
  app.addHook('onClose', async () => services.webhooks.deliverer.close());
  registerValidators(app);
  registerStrictInput(app);
  registerErrorHandling(app, { onDatabaseError: metrics.databaseError });
  app.addHook('onRequest', requireHost);
  registerTransportRules(app, config);
  refuseWhileClosing(app);

  // JSON only: without this, Fastify would also accept text/plain bodies.
  app.removeContentTypeParser(['text/plain']);
  // Our own JSON parser names the field of every refusal (see json-body.ts).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer, takesEmptyBody(request.routeOptions.schema?.body)));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addHook('onSend', (request, reply, _payload, done) => {
    setSecurityHeaders(request.url, reply);
    done();
  });
  registerSendBatching(app);

  await app.register(rateLimit, {
    global: false,
    enableDraftSpec: true,
    nameSpace: 'loyalty:ratelimit:',
    ...(options.redis ? { redis: options.redis } : {}),
    // With Redis unreachable the limit is skipped (and logged), not every request failed.
    skipOnError: true,
  });
  await registerOpenApi(app, config);

  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'checkLiveness',
        tags: ['Service'],
        summary: 'Liveness: the process answers',
        description: 'Answers while the process runs, also under overload; never touches the database.',
        response: {
          200: Type.Object({ status: Type.Literal('ok') }, { description: 'The process is alive' }),
          503: errorRef('unavailable: the process is shutting down'),
        },
      },
      config: answersUnderLoad,
    },
    async () => ({ status: 'ok' as const }),
  );
  app.get(
    '/version',
    {
      schema: {
        operationId: 'getVersion',
        tags: ['Service'],
        summary: 'The version of the service that answers',
        description:
          'The version of this server (package.json), as the OpenAPI document and the webhooks’ User-Agent carry it.',
        response: {
          200: Type.Object(
            { version: Type.String({ description: 'Semantic version, such as 0.2.0', examples: ['0.2.0'] }) },
            { description: 'The version' },
          ),
        },
      },
      config: answersUnderLoad,
    },
    async () => ({ version: VERSION }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'checkReadiness',
        tags: ['Service'],
        summary: 'Readiness: the database answers',
        description: 'For a load balancer: 200 while this process can serve requests, 503 while it cannot.',
        response: {
          200: Type.Object({ status: Type.Literal('ready') }, { description: 'The database answers' }),
          503: errorRef('unavailable: the database is unreachable, the process is overloaded or shutting down'),
        },
      },
    },
    async () => {
      if (!(await isReachable(db))) throw new DomainError('unavailable', 'the database is unreachable');
      return { status: 'ready' as const };
    },
  );

  for (const room of rooms) {
    if (room.routes) await app.register(room.routes, (room.routeOptions?.(config) ?? {}) as never);
  }
  await app.register(homeRoutes);

  // The overload check and authentication come last among the plugins, yet their onRequest hooks
  // run for every route, in this order (after the HTTPS and shutdown rules): overload is refused
  // before any credential is read.
  if (config.maxEventLoopDelayMs > 0) {
    // Past this event-loop delay, answering 503 at once beats every caller timing out.
    await app.register(underPressure, {
      maxEventLoopDelay: config.maxEventLoopDelayMs,
      retryAfter: 1,
      pressureHandler: overloadedUnlessStarting(app),
    });
  }
  registerAuth(app, services.auth, config, options.redis ?? null);
  return app;
}

/**
 * Headers for a JSON API: nothing is sniffed, framed, cached or sent as a referrer. The docs
 * page (/docs) gets its own content security policy (DOCS_CSP in http/openapi.ts, never framed
 * either), since Swagger UI runs scripts.
 */
function setSecurityHeaders(url: string, reply: FastifyReply): void {
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-frame-options', 'DENY');
  if (url.startsWith('/docs')) return;
  if (!reply.hasHeader('content-security-policy')) {
    reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  }
  reply.header('cross-origin-resource-policy', 'same-origin');
  if (url.startsWith('/v1/')) reply.header('cache-control', 'no-store');
}

/** @fastify/under-pressure's default sample interval: each reading is the mean delay over one. */
const PRESSURE_SAMPLE_MS = 1000;

/**
 * under-pressure's answer to a delay past the limit: `503 unavailable`, except for readings that
 * may still hold the start. It measures the event-loop delay from the moment it is registered,
 * and building and compiling the routes is one long synchronous stretch; the first sample after
 * it (on a loaded machine, a second or more with no other sample) read as an overload and
 * answered 503 to a new process's first requests. Readings count from one and a half sample
 * intervals after the app is ready, by when a sample of its own running has been taken.
 */
function overloadedUnlessStarting(app: FastifyInstance) {
  let readyAt = Number.POSITIVE_INFINITY;
  app.addHook('onReady', async () => {
    readyAt = performance.now();
  });
  return async (): Promise<void> => {
    if (performance.now() - readyAt < 1.5 * PRESSURE_SAMPLE_MS) return;
    throw new DomainError('unavailable', 'the service is temporarily unavailable; retry shortly');
  };
}

/** Once shutdown starts, new requests get `503 unavailable`; requests in flight finish. */
function refuseWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.decorate('refuseNewRequests', () => {
    closing = true;
  });
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    done(new DomainError('unavailable', 'the server is shutting down; retry on another connection'));
  });
}
