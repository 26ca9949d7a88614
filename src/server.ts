import cluster, { type Worker } from 'node:cluster';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { buildApp } from './app.js';
import { BackgroundThread } from './background.js';
import { systemClock } from './clock.js';
import { type Config, ConfigError, loadConfig, localBaseUrl, redactUrl } from './config.js';
import { SAFE_LOGGING } from './http/log-redaction.js';
import {
  answerClusterScrapes,
  clusterMetricsCollector,
  type MetricsServer,
  startMetricsServer,
} from './http/metrics.js';
import { type Db, openDb } from './storage/db.js';
import { migrateToLatest } from './storage/migrator.js';
import { forgetPublicUrl, recordPublicUrl } from './storage/server-settings.js';
import {
  clusterWriteTurn,
  handOutWriteTurns,
  MAIN_THREAD,
  SharedWriteLock,
  type WriteTurn,
} from './storage/write-turns.js';

/** How long shutdown waits for requests in flight before exiting anyway. */
const SHUTDOWN_GRACE_MS = 10_000;
/**
 * How long the port stays open after a stop signal, answering new requests `503 unavailable`.
 * Closing it at once would reset connections that clients had already opened and written to
 * but that the server had not yet read (still in the kernel's accept queue, or accepted and
 * not yet parsed): requests sent before the signal, lost without an answer.
 */
const SHUTDOWN_DRAIN_MS = 1000;
/** A worker that dies is replaced, unless workers keep dying this fast. */
const RESTART_WINDOW_MS = 10_000;
const MAX_RESTARTS_IN_WINDOW = 5;

/**
 * Starts the service. With WORKERS=1 (the default) this process serves; with WORKERS=N the
 * primary migrates the database once and then forks N workers that share the port.
 */
async function main(): Promise<void> {
  const config = readConfig();
  if (cluster.isPrimary && config.workers > 1) {
    await runPrimary(config);
  } else {
    await runServer(config, { migrate: cluster.isPrimary });
  }
}

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(78); // EX_CONFIG
  }
}

/**
 * On SQLite, the process's write lock, which its serving thread and its job thread take in turns
 * (and with WORKERS=N, the primary's turn, which they take after it); null on PostgreSQL.
 */
interface ProcessWriteLock {
  buffer: SharedArrayBuffer;
  upstream?: WriteTurn;
}

function processWriteLock(config: Config): ProcessWriteLock | null {
  if (!config.databaseUrl.startsWith('sqlite:')) return null;
  // The workers of WORKERS=N on one SQLite file write in turns the primary hands out.
  return { buffer: SharedWriteLock.buffer(), ...(cluster.isWorker ? { upstream: clusterWriteTurn() } : {}) };
}

/** Opens the database and, when asked, brings its schema up to date; exits 1 with a reason if it cannot. */
async function prepareDatabase(config: Config, migrate: boolean, lock: ProcessWriteLock | null = null): Promise<Db> {
  const db = openDb(config.databaseUrl, {
    sqliteSynchronous: config.sqliteSynchronous,
    poolMax: config.databasePoolSize,
    preparedStatements: config.databasePreparedStatements,
    ...(lock ? { writeTurn: new SharedWriteLock(lock.buffer, MAIN_THREAD, lock.upstream) } : {}),
  });
  try {
    if (migrate) await migrateToLatest(db);
    return db;
  } catch (error) {
    process.stderr.write(`Cannot prepare the database at ${db.location}: ${(error as Error).message}\n`);
    await db.close().catch(() => {});
    process.exit(1);
  }
}

async function connectRedis(config: Config): Promise<Redis | null> {
  if (!config.redisUrl) return null;
  // Fail fast rather than queue: a request must not hang while Redis is away.
  const redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  try {
    await redis.connect();
    return redis;
  } catch (error) {
    process.stderr.write(`Cannot connect to Redis at ${redactUrl(config.redisUrl)}: ${(error as Error).message}\n`);
    redis.disconnect();
    process.exit(1);
  }
}

/** One serving process: listen, then on SIGTERM/SIGINT finish requests in flight and exit 0. */
async function runServer(config: Config, options: { migrate: boolean }): Promise<void> {
  // Signals are handled from the first moment: one that arrives while the process is still
  // starting must stop it cleanly too, not kill it with the default action.
  let stop: (signal: string) => Promise<void> = async () => process.exit(0);
  let stopping = false;
  const onSignal = (signal: string) => {
    if (stopping) return;
    stopping = true;
    void stop(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  if (cluster.isWorker && config.metricsPort !== null) answerClusterScrapes();

  const lock = processWriteLock(config);
  const db = await prepareDatabase(config, options.migrate, lock);
  const redis = await connectRedis(config);
  const https = config.tls
    ? { key: readFileSync(config.tls.keyFile), cert: readFileSync(config.tls.certFile) }
    : undefined;
  const app = await buildApp({ config, db, redis, server: https ? { https } : {} });
  redis?.on('error', (error) => app.log.warn({ err: error }, 'redis error'));
  // Once per server: the workers of WORKERS=N leave it to their primary.
  if (cluster.isPrimary) warnOfRiskySettings(config, app.log);
  let metricsServer: MetricsServer | null = null;
  let background: BackgroundThread | null = null;
  /** The address this server recorded for the CLI, taken back when it stops. */
  let recorded: string | null = null;

  stop = async (signal: string) => {
    app.log.info({ signal }, 'shutting down: finishing requests in flight');
    const timer = setTimeout(() => {
      app.log.error('requests still in flight after the grace period; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    timer.unref();
    try {
      app.refuseNewRequests();
      await new Promise((resolve) => setTimeout(resolve, SHUTDOWN_DRAIN_MS));
      await metricsServer?.close();
      await app.close();
      await background?.stop();
      // A stopped server's address would send the CLI's URLs nowhere; another server's stays.
      if (recorded !== null) await forgetPublicUrl(db.kysely, recorded).catch(() => {});
      await db.close();
      redis?.disconnect();
      app.log.info('stopped');
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  if (stopping) return stop('SIGTERM');

  // Every serving process runs the background work (deliveries, retention, upkeep: src/jobs/) on a
  // thread of its own, started (and the recurring jobs' rows written the first time) before the
  // port opens, as the migrations are.
  try {
    background = await BackgroundThread.start(app.services.jobs, app.log, lock);
    app.background = background;
  } catch (error) {
    process.stderr.write(`Cannot start the background work: ${(error as Error).message}\n`);
    await db.close().catch(() => {});
    process.exit(1);
  }
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    process.stderr.write(`Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}\n`);
    await db.close().catch(() => {});
    process.exit(1);
  }
  if (config.metricsPort !== null) {
    // With WORKERS=N the primary serves the metrics port, asking every worker for its metrics.
    if (cluster.isWorker) answerClusterScrapes(app.metricsRegistry);
    else {
      metricsServer = await listenForMetrics(config, () => app.metricsRegistry.metrics(), https, app.log);
    }
  }
  // The port actually bound (PORT=0 picks one), and the pages a newcomer opens first.
  const base = localBaseUrl(config, (app.server.address() as AddressInfo).port);
  // The CLI prints the addresses of this server, not of its own HOST and PORT.
  await recordPublicUrl(db.kysely, base, systemClock.now()).then(
    () => {
      recorded = base;
    },
    (error) => app.log.warn({ err: error }, 'could not record the public address for the CLI'),
  );
  app.log.info(
    { database: db.location, worker: cluster.worker?.id ?? null, console: `${base}/admin`, docs: `${base}/docs` },
    `loyalty API ready: the console at ${base}/admin, the API reference at ${base}/docs`,
  );
}

/**
 * A warning at start for a setting meant for tests and private deployments only, so that one left
 * on in production shows in the log (docs/webhooks.md, "Destinations").
 */
function warnOfRiskySettings(config: Config, log: { warn(obj: object, msg: string): void }): void {
  if (!config.events.webhookAllowPrivateNetworks) return;
  log.warn(
    { setting: 'WEBHOOK_ALLOW_PRIVATE_NETWORKS' },
    'WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: webhooks may use http:// and reach loopback, private and link-local ' +
      'addresses (this machine, its network, the cloud metadata address). For tests and private deployments only.',
  );
}

/** The METRICS_PORT listener; exits 1 with a reason if it cannot listen. */
async function listenForMetrics(
  config: Config,
  collect: () => Promise<string>,
  tls: { key: Buffer; cert: Buffer } | undefined,
  log: { info(obj: object, msg: string): void; error(obj: object, msg: string): void },
): Promise<MetricsServer> {
  try {
    const server = await startMetricsServer(config, collect, {
      ...(tls ? { tls } : {}),
      onError: (error) => log.error({ err: error }, 'metrics could not be collected'),
    });
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    log.info({ port: server.port }, `metrics listening at ${tls ? 'https' : 'http'}://${host}:${server.port}/metrics`);
    return server;
  } catch (error) {
    process.stderr.write(
      `Cannot listen for metrics on ${config.host}:${config.metricsPort}: ${(error as Error).message}\n`,
    );
    process.exit(1);
  }
}

/** The primary of WORKERS=N: migrate once, fork, replace workers that die, stop them all on a signal. */
async function runPrimary(config: Config): Promise<void> {
  const log = pino({ level: config.logLevel, ...SAFE_LOGGING });
  warnOfRiskySettings(config, log);
  const db = await prepareDatabase(config, true);
  const sqlite = db.dialect === 'sqlite';
  await db.close();
  if (sqlite) handOutWriteTurns();
  const tls = config.tls
    ? { key: readFileSync(config.tls.keyFile), cert: readFileSync(config.tls.certFile) }
    : undefined;
  const metricsServer =
    config.metricsPort === null ? null : await listenForMetrics(config, clusterMetricsCollector(), tls, log);

  let stopping = false;
  const restarts: number[] = [];
  const fork = () => cluster.fork();
  cluster.on('exit', (worker: Worker, code, signal) => {
    if (stopping) return;
    const now = Date.now();
    restarts.push(now);
    while (restarts.length > 0 && (restarts[0] ?? now) < now - RESTART_WINDOW_MS) restarts.shift();
    if (restarts.length > MAX_RESTARTS_IN_WINDOW) {
      log.fatal({ worker: worker.id, code, signal }, 'workers keep dying; giving up');
      stopAll(1);
      return;
    }
    log.error({ worker: worker.id, code, signal }, 'worker died; starting another');
    fork();
  });

  const stopAll = (exitCode: number) => {
    stopping = true;
    void metricsServer?.close();
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    let failed = exitCode !== 0;
    let remaining = workers.length;
    if (remaining === 0) process.exit(exitCode);
    for (const worker of workers) {
      worker.once('exit', (code, signal) => {
        // Killed by our own SIGTERM means it had not yet installed its handler: nothing was in flight.
        if (code !== 0 && signal !== 'SIGTERM') {
          failed = true;
          log.error({ worker: worker.id, code, signal }, 'worker did not stop cleanly');
        }
        if (--remaining === 0) {
          log.info('all workers stopped');
          process.exit(failed ? 1 : 0);
        }
      });
      worker.process.kill('SIGTERM');
    }
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      log.info({ signal, workers: config.workers }, 'shutting down workers');
      stopAll(0);
    });
  }

  for (let i = 0; i < config.workers; i++) fork();
  log.info({ workers: config.workers, database: redactUrl(config.databaseUrl) }, 'primary started workers');
}

await main();
