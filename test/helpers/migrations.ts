import { Kysely, SqliteDialect } from 'kysely';
import { type Db, openDb } from '../../src/storage/db.js';
import { migrations } from '../../src/storage/migrations/index.js';
import type { Database } from '../../src/storage/schema.js';
import { createTestDatabase, type TestDatabase } from './database.js';

/** A database with the migrations before one applied: for a test of that migration on older rows. */
export interface MigratedUntil {
  database: TestDatabase;
  db: Db;
  /** What the migrator runs migrations with: on SQLite the writing connection itself (src/storage/migrator.ts). */
  kysely: Kysely<Database>;
  /** Runs the migration itself, then every one after it. */
  migrateRest(): Promise<void>;
}

/** A new database of this pass's engine, migrated up to (not including) the migration `name`. */
export async function migratedUntil(name: string): Promise<MigratedUntil> {
  const database = await createTestDatabase({ empty: true });
  const db = openDb(database.url);
  const writer = db.sqlite?.writer;
  const kysely = writer
    ? new Kysely<Database>({
        dialect: new SqliteDialect({ database: { prepare: (text) => writer.prepare(text), close: () => {} } }),
      })
    : db.kysely;
  const names = Object.keys(migrations).sort();
  for (const earlier of names.filter((n) => n < name)) await migrations[earlier]!.up(kysely as never);
  const migrateRest = async () => {
    for (const later of names.filter((n) => n >= name)) await migrations[later]!.up(kysely as never);
  };
  return { database, db, kysely, migrateRest };
}
