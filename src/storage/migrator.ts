import { Kysely, type MigrationResultSet, Migrator, SqliteDialect, sql } from 'kysely';
import type { Db } from './db.js';
import { migrations } from './migrations/index.js';
import type { Database } from './schema.js';

/**
 * Applies every pending migration; returns the names applied now. Throws on failure.
 * Safe when several processes start at once: one runs the migrations, the others wait, then
 * find nothing to do. On PostgreSQL Kysely holds an advisory lock in its transaction. On SQLite
 * Kysely uses neither (it treats SQLite DDL as non-transactional), so the whole run happens
 * inside BEGIN IMMEDIATE on the writing connection, alone (no commit group open): the database's
 * write lock, taken before the state is read, waited for up to busy_timeout and retried after that.
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
  if (db.sqlite === undefined) return runMigrator(db, db.kysely);
  return db.sqlite.alone(async (writer) => {
    // Kysely's own SQLite dialect on the writing connection: one connection, so every statement
    // of the migrations runs inside this transaction. Closing it must not close the connection.
    const kysely = new Kysely<Database>({
      dialect: new SqliteDialect({ database: { prepare: (text) => writer.prepare(text), close: () => {} } }),
    });
    await sql`begin immediate`.execute(kysely);
    try {
      const applied = await runMigrator(db, kysely);
      await sql`commit`.execute(kysely);
      return applied;
    } catch (error) {
      await sql`rollback`.execute(kysely).catch(() => {});
      throw error;
    } finally {
      await kysely.destroy();
    }
  });
}

async function runMigrator(db: Db, kysely: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({
    db: kysely,
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
