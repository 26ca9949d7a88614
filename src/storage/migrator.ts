import { type MigrationResultSet, Migrator, sql } from 'kysely';
import type { Db } from './db.js';
import { migrations } from './migrations/index.js';

/**
 * Applies every pending migration; returns the names applied now. Throws on failure.
 * Safe when several processes start at once: on PostgreSQL Kysely holds an advisory lock while
 * it migrates, so one process runs the migrations and the others wait, then find nothing to do.
 * SQLite has no such lock; a process that loses the race for the write lock gets SQLITE_BUSY
 * and tries again, by which time the winner has committed.
 */
export async function migrateToLatest(db: Db): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateOnce(db);
    } catch (error) {
      if (db.dialect !== 'sqlite' || !isBusy(error) || attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
    }
  }
}

function isBusy(error: unknown): boolean {
  const causes = [error, (error as { cause?: unknown })?.cause];
  return causes.some((e) =>
    /SQLITE_BUSY|database is locked/.test(`${(e as { code?: string })?.code} ${(e as Error)?.message}`),
  );
}

async function migrateOnce(db: Db): Promise<string[]> {
  const migrator = new Migrator({
    db: db.kysely,
    provider: { getMigrations: async () => migrations },
    // Kysely looks for its bookkeeping tables in every schema it can see; pinning them to the
    // connection's own schema keeps several databases in one PostgreSQL server (schemas) apart.
    ...(db.dialect === 'postgres' ? { migrationTableSchema: await currentSchema(db) } : {}),
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    const cause = result.error instanceof Error ? result.error.message : String(result.error);
    throw new Error(`Migration ${failed ?? '(unknown)'} failed: ${cause}`, {
      cause: result.error,
    });
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

async function currentSchema(db: Db): Promise<string> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db.kysely);
  const schema = rows[0]?.schema;
  if (!schema) throw new Error('the PostgreSQL connection has no current schema (check search_path)');
  return schema;
}
