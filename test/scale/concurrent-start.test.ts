import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDb } from '../../src/storage/db.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { createTestDatabaseUrl, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';

// Several processes starting at once on an empty database: one migrates, the others wait, and
// all of them serve (PostgreSQL: Kysely's advisory lock; SQLite: the write lock, retried).
describe(`server processes starting at once on an empty ${testEngine} database`, () => {
  let servers: ServerProcess[] = [];
  let database: TestDatabaseUrl | undefined;
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await database?.drop();
  });

  it('all start, and every migration ran exactly once', async () => {
    database = await createTestDatabaseUrl();
    const env = { DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' };
    const started = await Promise.allSettled([
      startServer(env),
      startServer(env),
      startServer(env),
      startServer({ ...env, WORKERS: '2' }),
    ]);
    // Every server that did start is stopped in afterAll, even when another failed.
    servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    for (const server of servers) expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const db = openDb(database.url);
    try {
      const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db.kysely);
      expect(rows.map((r) => r.name)).toEqual(Object.keys(migrations).sort());
    } finally {
      await db.close();
    }
  }, 120_000);
});
