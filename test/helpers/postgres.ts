import pg from 'pg';

/** Every schema a test makes starts with this, so a run can clean up what a crash left behind. */
export const TEST_SCHEMA_PREFIX = 'loyalty_test_';

/** What the names of a run's worker databases add to TEST_DATABASE_URL's database name. */
const RUN_INFIX = '_run';

// Which run this is: the vitest process's pid, provided by test/global-setup.ts (inject() in a test).
declare module 'vitest' {
  export interface ProvidedContext {
    loyaltyTestRun: number;
  }
}

/**
 * The database the test files of vitest worker `poolId` make their schemas in: TEST_DATABASE_URL
 * with `_run<pid>_w<n>` added to the database name. Files run in parallel, and Kysely's migrator
 * reads the catalog of every schema in its database (`pg_get_serial_sequence` on each table),
 * failing with "schema … does not exist" when another file drops a schema meanwhile; a database
 * per worker keeps each file's schemas and server processes among themselves, as in a serial
 * run. The run's pid in the name does the same for two runs at once on one server (two
 * checkouts, two people): with names shared between runs, one run's drops broke the other's
 * migrations. test/global-setup.ts drops a run's databases after it.
 */
export function workerDatabaseUrl(base: string, run: number, poolId = process.env.VITEST_POOL_ID ?? '0'): string {
  const url = new URL(base);
  url.pathname = `/${databaseName(base)}${RUN_INFIX}${run}_w${poolId}`;
  return url.toString();
}

let workerDatabase: Promise<string> | undefined;

/** This worker's database in run `run` (workerDatabaseUrl), created on first use. */
export function ensureWorkerDatabase(base: string, run: number): Promise<string> {
  workerDatabase ??= (async () => {
    const url = workerDatabaseUrl(base, run);
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      const name = databaseName(url);
      const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
      if (!rowCount) {
        await client.query(`create database ${pg.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
          if (error.code !== '42P04') throw error; // duplicate_database: made meanwhile
        });
      }
    } finally {
      await client.end();
    }
    return url;
  })();
  return workerDatabase;
}

/**
 * Drops the worker databases of run `run` (all of them, whoever holds a connection) and those of
 * runs whose process no longer runs (left over by a killed run); returns how many.
 */
export async function dropRunDatabases(url: string, run: number): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const prefix = `${databaseName(url)}${RUN_INFIX}`;
    const { rows } = await client.query<{ datname: string }>(
      'select datname from pg_database where starts_with(datname, $1)',
      [prefix],
    );
    let dropped = 0;
    for (const { datname } of rows) {
      const pid = Number(datname.slice(prefix.length).split('_')[0]);
      if (pid !== run && isAlive(pid)) continue;
      await client.query(`drop database if exists ${pg.escapeIdentifier(datname)} with (force)`);
      dropped++;
    }
    return dropped;
  } finally {
    await client.end();
  }
}

/**
 * Drops the test schemas of processes that no longer run (left over by a killed run), in the
 * database at `url` and in every worker database made from it.
 */
export async function dropStaleSchemas(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let workers: string[];
  try {
    const { rows } = await client.query<{ datname: string }>(
      'select datname from pg_database where starts_with(datname, $1)',
      [`${databaseName(url)}${RUN_INFIX}`],
    );
    workers = rows.map((row) => row.datname);
  } finally {
    await client.end();
  }
  let dropped = await dropStaleSchemasIn(url);
  for (const name of workers) {
    const worker = new URL(url);
    worker.pathname = `/${name}`;
    dropped += await dropStaleSchemasIn(worker.toString());
  }
  return dropped;
}

async function dropStaleSchemasIn(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      `select nspname from pg_namespace where nspname like '${TEST_SCHEMA_PREFIX}%'`,
    );
    let dropped = 0;
    for (const { nspname } of rows) {
      const pid = Number(nspname.slice(TEST_SCHEMA_PREFIX.length).split('_')[0]);
      if (isAlive(pid)) continue;
      await client.query(`drop schema if exists ${nspname} cascade`);
      dropped++;
    }
    return dropped;
  } finally {
    await client.end();
  }
}

/** The database name in a PostgreSQL URL (libpq's default: the user name, else postgres). */
function databaseName(url: string): string {
  const parsed = new URL(url);
  return decodeURIComponent(parsed.pathname.slice(1)) || decodeURIComponent(parsed.username) || 'postgres';
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
