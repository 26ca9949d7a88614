import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import type { Database } from './schema.js';

/** What marks a stand-in value, found again in a constant or the SQL text if a build misused one. */
const MARK = 'loyalty-value:';
/** What a stand-in value starts with: no value the service stores begins with a NUL character. */
const STAND_IN = `\u0000${MARK}`;

interface Compiled {
  query: CompiledQuery;
  /** For each parameter of the SQL: the name of the value it takes, or a constant of the query. */
  parameters: Array<{ name: string } | { constant: unknown }>;
}

/**
 * A query of one fixed shape, built and compiled by Kysely once per database dialect and then
 * run with new values each time. Building and compiling a query costs Kysely about as much CPU
 * as SQLite takes to run it (issue 17: about a fifth of a create_or_update request). For a
 * SELECT or a statement with RETURNING: it answers the rows.
 *
 * `build` must read each value by name (`pick` for a row) and pass it to Kysely unchanged, as a
 * value, never letting it decide the query's shape. The first run checks this and throws if not:
 * the query is built twice, with stand-ins and with nulls, and both must give the same SQL, with
 * each value read as a parameter of its own. A value that changes the shape (an optional
 * column) needs one query per shape.
 */
export function compiledQuery<V extends Record<string, unknown>, R>(
  build: (db: Kysely<Database>, values: V) => Compilable<R>,
): (db: Kysely<Database>, values: V) => Promise<R[]> {
  // Kysely's transactions share their database's adapter, so it names the dialect.
  const byAdapter = new WeakMap<object, Compiled>();
  return async (db, values) => {
    const adapter = db.getExecutor().adapter;
    let compiled = byAdapter.get(adapter);
    if (compiled === undefined) {
      compiled = compile(db, build);
      byAdapter.set(adapter, compiled);
    }
    const parameters = compiled.parameters.map((parameter) => {
      if (!('name' in parameter)) return parameter.constant;
      const value = values[parameter.name];
      // Kysely would have left the column out; the two drivers would not agree on undefined.
      if (value === undefined) throw new Error(`compiledQuery: no value for ${parameter.name}`);
      return value;
    });
    const result = await db.executeQuery<R>({ ...compiled.query, parameters } as CompiledQuery<R>);
    return result.rows;
  };
}

/** Values for a build: `of(name)` for each one read; reading them other than by name throws. */
function valuesFor<V>(of: (name: string) => unknown): V {
  const refuse = () => {
    throw new Error('compiledQuery: read the values one by name (pick for a row), not as a whole');
  };
  return new Proxy({} as V & object, {
    get: (_target, name) => of(String(name)),
    has: refuse,
    ownKeys: refuse,
    getOwnPropertyDescriptor: refuse,
  });
}

function compile<V extends Record<string, unknown>, R>(
  db: Kysely<Database>,
  build: (db: Kysely<Database>, values: V) => Compilable<R>,
): Compiled {
  const read = new Set<string>();
  const query = build(
    db,
    valuesFor<V>((name) => {
      read.add(name);
      return `${STAND_IN}${name}`;
    }),
  ).compile();
  const wrong: string[] = [];
  const parameters = query.parameters.map((parameter) => {
    const name = typeof parameter === 'string' && parameter.startsWith(STAND_IN) && parameter.slice(STAND_IN.length);
    if (name && read.has(name)) return { name };
    // A stand-in anywhere else (altered, or inside an array or object) would become a constant.
    if (JSON.stringify(parameter, (_key, value: unknown) => (typeof value === 'bigint' ? 0 : value))?.includes(MARK)) {
      wrong.push(`a constant made of a value: ${JSON.stringify(String(parameter))}`);
    }
    return { constant: parameter };
  });
  const used = new Set(parameters.flatMap((parameter) => ('name' in parameter ? [parameter.name] : [])));
  wrong.push(...[...read].filter((name) => !used.has(name)));
  if (query.sql.includes(MARK)) wrong.push('one in the SQL text');
  // Built again with every value null: a value that decides the shape gives other SQL.
  let nulls: CompiledQuery | undefined;
  try {
    nulls = build(
      db,
      valuesFor<V>(() => null),
    ).compile();
  } catch {
    // the build itself used a value (its length, a property of it)
  }
  const sameShape =
    nulls?.sql === query.sql &&
    nulls.parameters.every((parameter, i) => {
      const wanted = parameters[i];
      return wanted !== undefined && ('name' in wanted ? parameter === null : parameter === wanted.constant);
    });
  if (!sameShape) wrong.push('a value decides the shape of the query');
  if (wrong.length > 0) {
    throw new Error(
      `compiledQuery: every value read must reach the query unchanged, as a parameter: ${wrong.join(', ')}`,
    );
  }
  return { query, parameters };
}

/**
 * The fields of `values` named by `columns`, each read on its own: for the row of a compiled
 * INSERT, whose every column becomes a parameter (pass every column, null rather than undefined).
 */
export function pick<T, K extends keyof T>(values: T, columns: readonly K[]): Pick<T, K> {
  const picked = {} as Pick<T, K>;
  for (const column of columns) picked[column] = values[column];
  return picked;
}
