import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import { type Config, loadConfig } from '../../src/config.js';
import type { Services } from '../../src/services.js';
import { type Db, openDb } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrator.js';

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

/** A fresh, migrated SQLite database in its own temporary folder. */
export async function createTestDb(): Promise<TestDb> {
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
  clock: FakeClock;
  config: Config;
  close(): Promise<void>;
}

/** Builds the app on a fresh database, with a fake clock and no rate limit unless asked. */
export async function createTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const testDb = await createTestDb();
  const config = loadConfig({ RATE_LIMIT_PER_SECOND: '0', LOG_LEVEL: 'silent', ...env });
  const clock = new FakeClock();
  const app = await buildApp({ config, db: testDb.db, clock, logger: false });
  await app.ready();
  return {
    app,
    services: app.services,
    db: testDb.db,
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
