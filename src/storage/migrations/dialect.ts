import { type Kysely, PostgresAdapter } from 'kysely';

/** True when a migration runs against PostgreSQL (some of them have nothing to do on SQLite). */
export const isPostgres = (db: Kysely<unknown>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;
