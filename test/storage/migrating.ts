import { Kysely, SqliteDialect } from 'kysely';
import { type Db, openDb } from '../../src/storage/db.js';
import { migrations } from '../../src/storage/migrations/index.js';
import type { Database } from '../../src/storage/schema.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// What the tests of one migration share: a new database of this pass's engine with every migration
// before it run, to be given rows the migration then finds.

export interface MigratingDatabase {
  database: TestDatabase;
  db: Db;
  /** Runs statements as the migrator does: on SQLite on the writing connection itself (src/storage/migrator.ts). */
  kysely: Kysely<Database>;
  /** Runs the migration itself, then every one after it. */
  migrateRest(): Promise<void>;
}

/** A new, empty database migrated up to `name`, not including it. Close `db` and drop `database` after. */
export async function migratedBefore(name: string): Promise<MigratingDatabase> {
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
