// The job thread's entry (see background.ts): the process's background work, beside its serving
// thread, on its own database connection and its own event loop.
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import type { BackgroundData, BackgroundMessage, BackgroundReply } from './background.js';
import { systemClock } from './clock.js';
import { loadConfig } from './config.js';
import { choresOf, Housekeeping } from './housekeeping.js';
import { SAFE_LOGGING } from './http/log-redaction.js';
import { JobRunner } from './jobs/runner.js';
import { jobHandlers } from './rooms.js';
import { createServices, serviceOptions } from './services.js';
import { openDb } from './storage/db.js';
import { UnitOfWork } from './storage/unit-of-work.js';
import { JOB_THREAD, portWriteTurn, SharedWriteLock } from './storage/write-turns.js';

const data = workerData as BackgroundData;
const port = parentPort as MessagePort;
const config = loadConfig();
const log = pino({ level: config.logLevel, ...SAFE_LOGGING }).child({
  thread: 'jobs',
});
const db = openDb(config.databaseUrl, {
  sqliteSynchronous: config.sqliteSynchronous,
  // Claims, records and the handlers' reads: a few at once.
  poolMax: 4,
  preparedStatements: config.databasePreparedStatements,
  ...(data.writeLock
    ? {
        writeTurn: new SharedWriteLock(
          data.writeLock,
          JOB_THREAD,
          data.upstreamTurn ? portWriteTurn(data.upstreamTurn) : undefined,
        ),
      }
    : {}),
});
const services = createServices(db, serviceOptions(config, systemClock));
const uow = new UnitOfWork(db.kysely, systemClock);
const housekeeping = new Housekeeping(choresOf(services, db, uow), log);
const runner = new JobRunner(
  db,
  uow,
  services.jobs,
  systemClock,
  [...jobHandlers(services), housekeeping.job(systemClock)],
  log,
  {
    leaseMs: config.jobLeaseSeconds * 1000,
    // One process on a SQLite file claims alone (see JobRunnerOptions.alone).
    alone: db.dialect === 'sqlite' && config.workers === 1,
  },
);

port.on('message', (message: BackgroundMessage) => {
  switch (message.type) {
    case 'wake':
      services.jobs.wake(message.groups === null ? undefined : new Set(message.groups));
      break;
    case 'figures':
      reply({
        type: 'figures',
        id: message.id,
        queues: [...runner.stats],
        webhookAttempts: { ...services.webhooks.deliverer.stats },
      });
      break;
    case 'stop':
      void stop();
      break;
  }
});

function reply(message: BackgroundReply): void {
  port.postMessage(message);
}

async function stop(): Promise<void> {
  await runner.stop();
  services.webhooks.deliverer.close();
  await db.close();
  // Nothing left to keep the thread: it exits (an open port would keep it waiting for messages).
  data.upstreamTurn?.close();
  port.close();
}

// The recurring jobs' rows, written (the first time) before the serving thread opens the port.
await runner.prepare();
runner.start();
reply({ type: 'ready' });
