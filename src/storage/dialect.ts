import { PostgresAdapter } from 'kysely';

/** True when a Kysely instance (or a transaction of one) runs on PostgreSQL: for a statement only it can run. */
export const isPostgres = (db: { getExecutor(): { readonly adapter: unknown } }): boolean =>
  db.getExecutor().adapter instanceof PostgresAdapter;
