import type pg from 'pg';

/** SQL texts given a name per process: beyond this, a text runs unnamed (bulk inserts of every size make new SQL). */
const NAMED_TEXTS = 256;

/**
 * SQLSTATEs after which a text runs unnamed for good: "cached plan must not change result type"
 * (a table changed under a prepared `select *`), and "prepared statement does not exist" (pg
 * dropped it after a failed run while still counting it as prepared on that connection).
 */
const UNNAME_AFTER = new Set(['0A000', '26000']);

/**
 * Named (server-side prepared) statements for every query Kysely sends with parameters: each
 * connection of the pool has PostgreSQL parse and plan a SQL text once and then only binds and
 * runs it, where an unnamed statement is parsed and planned on every run. Kysely sends the same
 * text for the same query shape with its values as parameters, so the hot queries are a few
 * dozen texts. Measured on POST /v1/activities (`npm run bench:profile -- activities postgres`):
 * PostgreSQL's CPU per request 1,444 -> 805 µs, 594 -> 773 req/s.
 *
 * When a table changes under a prepared statement whose result has a new shape (a migration
 * adding a column while this process runs), PostgreSQL refuses to run it (0A000); the text then
 * runs unnamed from then on, in every connection, so only the requests already under way fail
 * (`503 unavailable`, and a retry succeeds). Poolers that cannot carry named statements
 * (PgBouncer in transaction mode before 1.21, or without `max_prepared_statements`) need
 * `DATABASE_PREPARED_STATEMENTS=off`.
 */
export function nameStatements(pool: pg.Pool): void {
  const names = new Map<string, string | null>();
  let next = 0;
  const nameOf = (text: string): string | null => {
    let name = names.get(text);
    if (name === undefined) {
      name = names.size < NAMED_TEXTS ? `loyalty_${next++}` : null;
      if (name !== null) names.set(text, name);
    }
    return name;
  };
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (config: unknown, values?: unknown) => Promise<pg.QueryResult>;
    // Kysely calls query(text, values) and awaits the promise; other calls pass through as they are.
    (client as unknown as { query: unknown }).query = (config: unknown, values?: unknown, ...rest: unknown[]) => {
      if (rest.length > 0 || typeof config !== 'string' || !Array.isArray(values) || values.length === 0) {
        return (query as (...args: unknown[]) => unknown)(config, values, ...rest);
      }
      const name = nameOf(config);
      if (name === null) return query(config, values);
      return query({ name, text: config, values }).catch((error: unknown) => {
        if (UNNAME_AFTER.has((error as { code?: string }).code ?? '')) names.set(config, null);
        throw error;
      });
    };
  });
}
