import { Kysely, SqliteDialect } from 'kysely';
import type { Db } from '../../src/storage/db.js';
import { migrations } from '../../src/storage/migrations/index.js';

/**
 * `db` migrated up to (not including) migration `name`, as the migrator runs them: on SQLite on
 * the writing connection itself (src/storage/migrator.ts). For testing a migration on the data
 * the ones before it left.
 */
export async function migratedUpTo(db: Db, name: string): Promise<Kysely<any>> {
  const writer = db.sqlite?.writer;
  const kysely: Kysely<any> = writer
    ? new Kysely<any>({
        dialect: new SqliteDialect({ database: { prepare: (text) => writer.prepare(text), close: () => {} } }),
      })
    : (db.kysely as Kysely<any>);
  for (const before of Object.keys(migrations)
    .sort()
    .filter((n) => n < name))
    await migrations[before]!.up(kysely);
  return kysely;
}
