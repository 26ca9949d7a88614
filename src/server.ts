import { readFileSync } from 'node:fs';
import { buildApp } from './app.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { openDb } from './storage/db.js';
import { migrateToLatest } from './storage/migrator.js';

/** How long shutdown waits for requests in flight before exiting anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

/** Starts the service: config, database and migrations, listen, graceful shutdown. */
export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(78); // EX_CONFIG
  }

  const db = openDb(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
  try {
    await migrateToLatest(db);
  } catch (error) {
    process.stderr.write(`Cannot prepare the database at ${db.location}: ${(error as Error).message}\n`);
    await db.close().catch(() => {});
    process.exit(1);
  }

  const https = config.tls
    ? { key: readFileSync(config.tls.keyFile), cert: readFileSync(config.tls.certFile) }
    : undefined;
  const app = await buildApp({ config, db, server: https ? { https } : {} });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing requests in flight');
    const timer = setTimeout(() => {
      app.log.error('requests still in flight after the grace period; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    timer.unref();
    try {
      await app.close();
      await db.close();
      app.log.info('stopped');
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    process.stderr.write(`Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}\n`);
    await db.close().catch(() => {});
    process.exit(1);
  }
  app.log.info({ database: db.location }, 'loyalty API ready');
}

await main();
