import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import { type Config, loadConfig } from '../../src/config.js';
import { SAFE_LOGGING } from '../../src/http/log-redaction.js';
import type { Services } from '../../src/services.js';
import type { Db, DbOptions } from '../../src/storage/db.js';
import { createTestDatabase, createTestDb, type TestDatabase } from './database.js';

// The test-database factory lives in ./database.ts; these names stay here for the files that
// import them from app.ts.
export { createTestDb, type TestDb, testEngine } from './database.js';
/** A database of this pass's engine, by URL, and how to drop it (TestDatabase). */
export type TestDatabaseUrl = TestDatabase;

/** A clock the test moves by hand. */
export class FakeClock implements Clock {
  constructor(private current = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}

/** A new, empty database URL of this pass's engine (nothing migrated), and how to drop it. */
export const createTestDatabaseUrl = (): Promise<TestDatabaseUrl> => createTestDatabase({ empty: true });

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
  options: { logLines?: string[]; onQuery?: DbOptions['onQuery'] } = {},
): Promise<TestApp> {
  const testDb = await createTestDb(options.onQuery ? { onQuery: options.onQuery } : {});
  const config = loadConfig({ RATE_LIMIT_PER_SECOND: '0', LOG_LEVEL: 'silent', ...env });
  const clock = new FakeClock();
  const { logLines } = options;
  const logger = logLines
    ? {
        level: 'trace',
        ...SAFE_LOGGING,
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
  const key = await services.auth.createApiKey(account.id);
  const app = await services.apps.create({ name: `${name} app`, redirectUris: ['https://app.example/callback'] });
  const token = await services.auth.issueAccessToken({ accountId: account.id, clientId: app.client_id });
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
