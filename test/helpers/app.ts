import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import { type Config, loadConfig } from '../../src/config.js';
import type { Services } from '../../src/services.js';
import { type Db, openDb } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrator.js';
import { ensureWorkerDatabase, TEST_SCHEMA_PREFIX } from './postgres.js';

/** A clock the test moves by hand. */
export class FakeClock implements Clock {
  constructor(private current = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

export interface TestDb {
  db: Db;
  url: string;
  /** Closes and deletes the database. */
  destroy(): Promise<void>;
}

/** The engine of this test pass: the `postgres` project sets LOYALTY_TEST_ENGINE (vitest.config.ts). */
export const testEngine: 'sqlite' | 'postgres' = process.env.LOYALTY_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * A fresh, migrated database: on SQLite a file in its own temporary folder; on PostgreSQL
 * (TEST_DATABASE_URL) a schema of its own, dropped by destroy().
 */
export async function createTestDb(): Promise<TestDb> {
  return testEngine === 'postgres' ? createPostgresTestDb() : createSqliteTestDb();
}

/** A database of this pass's engine, by URL, and how to drop it. */
export interface TestDatabaseUrl {
  url: string;
  drop(): Promise<void>;
}

/** A new, empty database URL of this pass's engine (nothing migrated), and how to drop it. */
export async function createTestDatabaseUrl(): Promise<TestDatabaseUrl> {
  if (testEngine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'loyalty-test-'));
    return { url: `sqlite:${join(dir, 'test.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!process.env.TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL must be set for the PostgreSQL pass');
  const base = await ensureWorkerDatabase(process.env.TEST_DATABASE_URL);
  const schema = `${TEST_SCHEMA_PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
}

async function createPostgresTestDb(): Promise<TestDb> {
  const { url, drop } = await createTestDatabaseUrl();
  const db = openDb(url, { poolMax: 5 });
  await migrateToLatest(db);
  return {
    db,
    url,
    destroy: async () => {
      await db.close();
      await drop();
    },
  };
}

async function createSqliteTestDb(): Promise<TestDb> {
  const dir = mkdtempSync(join(tmpdir(), 'loyalty-test-'));
  const url = `sqlite:${join(dir, 'test.db')}`;
  const db = openDb(url, { sqliteSynchronous: 'NORMAL' });
  await migrateToLatest(db);
  return {
    db,
    url,
    destroy: async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  db: Db;
  /** The database's URL, for a second connection (as another process would have). */
  url: string;
  clock: FakeClock;
  config: Config;
  close(): Promise<void>;
}

/**
 * Builds the app on a fresh database, with a fake clock and no rate limit unless asked. With
 * `logLines`, the app logs at trace level into that array (the log tests read it).
 */
export async function createTestApp(
  env: Record<string, string> = {},
  options: { logLines?: string[] } = {},
): Promise<TestApp> {
  const testDb = await createTestDb();
  const config = loadConfig({ RATE_LIMIT_PER_SECOND: '0', LOG_LEVEL: 'silent', ...env });
  const clock = new FakeClock();
  const { logLines } = options;
  const logger = logLines
    ? {
        level: 'trace',
        stream: new Writable({
          write(chunk, _encoding, done) {
            logLines.push(String(chunk));
            done();
          },
        }),
      }
    : false;
  const app = await buildApp({ config, db: testDb.db, clock, logger });
  await app.ready();
  return {
    app,
    services: app.services,
    db: testDb.db,
    url: testDb.url,
    clock,
    config,
    close: async () => {
      await app.close();
      await testDb.destroy();
    },
  };
}

export interface Tenant {
  accountId: number;
  /** An API key with every scope. */
  apiKey: string;
  apiKeyId: number;
  /** An app access token with every scope. */
  accessToken: string;
  clientId: string;
}

/** A new account with an all-scopes API key and an all-scopes app token. */
export async function createTenant(services: Services, name = 'Test shop'): Promise<Tenant> {
  const account = await services.accounts.create(name);
  const key = await services.credentials.createApiKey(account.id);
  const app = await services.apps.create({ name: `${name} app`, redirectUris: ['https://app.example/callback'] });
  const token = await services.credentials.issueAccessToken({ accountId: account.id, clientId: app.client_id });
  return {
    accountId: account.id,
    apiKey: key.key,
    apiKeyId: key.id,
    accessToken: token.access_token,
    clientId: app.client_id,
  };
}

export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}
