import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { inject } from 'vitest';
import { type Db, type DbOptions, openDb } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrator.js';
import type { Database } from '../../src/storage/schema.js';
import { ensureWorkerDatabase, TEST_SCHEMA_PREFIX } from './postgres.js';

// The one place tests get a database from. Each test gets a database of its own, of this pass's
// engine, but the migrations run once per worker process: into a template, which each new
// database then copies. Migrating costs ~650 ms a test on PostgreSQL (the DDL itself: replaying
// the same statements costs nearly as much one by one) and ~100 ms on SQLite.
//  - SQLite: the template is a migrated file; a test's database is a copy of it.
//  - PostgreSQL: a test's database is a schema of its own in the worker's database
//    (test/helpers/postgres.ts). The migrations run once, into a template schema, and the
//    statements they sent are recorded; a new schema replays them in one round trip and one
//    transaction. `CREATE DATABASE … TEMPLATE` was measured too: its copy is quick but every
//    DROP DATABASE forces a checkpoint (0.1 to 8 s under load), so schemas stay.
// A copy shares the template's rows, which the migrations seed: the same server secret in every
// test database of a worker, as if they were one server's successive databases.

/** The engine of this test pass: the `postgres` project sets LOYALTY_TEST_ENGINE (vitest.config.ts). */
export const testEngine: 'sqlite' | 'postgres' = process.env.LOYALTY_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

/** A database of this pass's engine, by URL, and how to drop it. */
export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A new database of this pass's engine, migrated to the latest schema; with `{ empty: true }`
 * nothing is migrated (for tests of migrating itself, and of what a first start does).
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  if (testEngine === 'sqlite') return createSqliteDatabase(options.empty ? null : await sqliteTemplate());
  return createPostgresSchema(options.empty ? null : await postgresTemplate());
}

/** A test database with a handle open on it. */
export interface TestDb {
  db: Db;
  url: string;
  /** Closes the handle and drops the database. */
  destroy(): Promise<void>;
}

/** A new, migrated database of this pass's engine (createTestDatabase), opened. */
export async function createTestDb(options: DbOptions = {}): Promise<TestDb> {
  const { url, drop } = await createTestDatabase();
  const db = openDb(url, {
    ...(testEngine === 'sqlite' ? { sqliteSynchronous: 'NORMAL' } : { poolMax: 5 }),
    ...options,
  });
  return {
    db,
    url,
    destroy: async () => {
      await db.close();
      await drop();
    },
  };
}

/**
 * Everything the database at `url` holds, as text, for "no secret is stored in clear" checks: on
 * SQLite the bytes of its files (the WAL too, so free pages and unmerged writes count); on
 * PostgreSQL, whose files are the server's, every row of every table of its schema.
 */
export async function storedText(url: string): Promise<string> {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length);
    return readdirSync(dirname(file))
      .filter((name) => name.startsWith(basename(file)))
      .map((name) => readFileSync(join(dirname(file), name)).toString('latin1'))
      .join('');
  }
  return withClient(url, async (client) => {
    const { rows: tables } = await client.query<{ name: string }>(
      `select table_name as name from information_schema.tables
        where table_schema = current_schema() and table_type = 'BASE TABLE' order by 1`,
    );
    const parts: string[] = [];
    for (const { name } of tables) {
      const { rows } = await client.query<{ text: string }>(
        `select coalesce(string_agg(row_to_json(t)::text, E'\\n'), '') as text from ${pg.escapeIdentifier(name)} t`,
      );
      parts.push(rows[0]?.text ?? '');
    }
    return parts.join('\n');
  });
}

// SQLite --------------------------------------------------------------------------------------

let sqliteTemplateFile: Promise<string> | undefined;

/** This worker's migrated template file, made on first use and removed when the worker exits. */
function sqliteTemplate(): Promise<string> {
  sqliteTemplateFile ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loyalty-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'template.db');
    const db = openDb(`sqlite:${file}`, { sqliteSynchronous: 'NORMAL' });
    try {
      await migrateToLatest(db);
    } finally {
      // Closing the last connection checkpoints the WAL into the file, so the file alone is the copy.
      await db.close();
    }
    return file;
  })();
  return sqliteTemplateFile;
}

function createSqliteDatabase(template: string | null): TestDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'loyalty-test-'));
  const file = join(dir, 'test.db');
  if (template) {
    copyFileSync(template, file);
    // Only if a close did not checkpoint (it always has so far): the WAL belongs with its file.
    if (existsSync(`${template}-wal`)) copyFileSync(`${template}-wal`, `${file}-wal`);
  }
  return { url: `sqlite:${file}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

// PostgreSQL ----------------------------------------------------------------------------------

interface PostgresTemplate {
  /** The worker's database (ensureWorkerDatabase), without a search_path. */
  base: string;
  /** The template schema's name, as it appears in `script`. */
  schema: string;
  /** The migrations' statements, parameters written in, `;`-separated. */
  script: string;
  /** Whether a copy was compared with the template yet (once per worker). */
  checked: boolean;
}

let postgresTemplateScript: Promise<PostgresTemplate> | undefined;

/**
 * This worker's template: the migrations run once into a schema of their own, through a Kysely
 * that records each statement it sends. The migrator's own reads (the catalog, its lock and its
 * bookkeeping) and the transaction around them are left out; its writes to its bookkeeping
 * tables are kept, so that a copy counts as migrated.
 */
function postgresTemplate(): Promise<PostgresTemplate> {
  postgresTemplateScript ??= (async () => {
    if (!process.env.TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL must be set for the PostgreSQL pass');
    const base = await ensureWorkerDatabase(process.env.TEST_DATABASE_URL, inject('loyaltyTestRun'));
    // The prefix and the pid let the stale-schema cleanup drop it once this worker has exited.
    const schema = `${TEST_SCHEMA_PREFIX}${process.pid}_template_${randomBytes(4).toString('hex')}`;
    await withClient(base, (client) => client.query(`create schema ${schema}`));
    const statements: string[] = [];
    const pool = new pg.Pool({ connectionString: withSearchPath(base, schema), max: 2 });
    const kysely = new Kysely<Database>({
      dialect: new PostgresDialect({ pool }),
      log: (event) => {
        if (event.level !== 'query') return;
        const text = event.query.sql.trim();
        if (/^(begin|commit|rollback)$/i.test(text) || /^(select|with)\b/i.test(text)) return;
        statements.push(inlineParameters(text, event.query.parameters));
      },
    });
    const db: Db = {
      kysely,
      dialect: 'postgres',
      location: 'the test template',
      changes: null,
      snapshot: (read) => read(kysely),
      close: () => kysely.destroy(),
    };
    try {
      await migrateToLatest(db);
    } finally {
      await db.close();
    }
    return { base, schema, script: statements.join(';\n'), checked: false };
  })();
  return postgresTemplateScript;
}

async function createPostgresSchema(template: PostgresTemplate | null): Promise<TestDatabase> {
  if (!process.env.TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL must be set for the PostgreSQL pass');
  const base = template?.base ?? (await ensureWorkerDatabase(process.env.TEST_DATABASE_URL, inject('loyaltyTestRun')));
  const schema = `${TEST_SCHEMA_PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`;
  await withClient(base, async (client) => {
    if (!template) return client.query(`create schema ${schema}`);
    // One round trip, one transaction: a half-made schema is never left behind.
    await client.query(
      `begin; create schema ${schema}; set local search_path to ${schema};\n` +
        `${template.script.replaceAll(template.schema, schema)};\ncommit`,
    );
    if (!template.checked) {
      await expectSameSchema(client, template.schema, schema);
      template.checked = true;
    }
  });
  return {
    url: withSearchPath(base, schema),
    drop: () => withClient(base, (client) => client.query(`drop schema if exists ${schema} cascade`)).then(() => {}),
  };
}

/**
 * Fails unless the schema `copy` holds what the migrations made in `template`: columns, defaults,
 * constraints, indexes, triggers, functions and the rows the migrations wrote. Run on a worker's
 * first copy, it catches a migration whose effect the replay would miss (a `select setval(…)`).
 */
async function expectSameSchema(client: pg.Client, template: string, copy: string): Promise<void> {
  const describe = async (schema: string) => {
    const parts: unknown[] = [];
    for (const query of [
      `select table_name, column_name, data_type, column_default, is_nullable from information_schema.columns
        where table_schema = $1 order by table_name, column_name`,
      `select conrelid::regclass::text as rel, conname, pg_get_constraintdef(oid) as def from pg_constraint
        where connamespace = $1::regnamespace order by rel, conname`,
      'select indexname, indexdef from pg_indexes where schemaname = $1 order by indexname',
      `select trigger_name, event_manipulation, event_object_table, action_statement from information_schema.triggers
        where trigger_schema = $1 order by trigger_name, event_manipulation`,
      'select proname, prosrc from pg_proc where pronamespace = $1::regnamespace order by proname',
    ]) {
      parts.push((await client.query(query, [schema])).rows);
    }
    for (const table of ['kysely_migration', 'server_secrets']) {
      parts.push((await client.query(`select * from ${schema}.${table} order by 1`)).rows);
    }
    return JSON.stringify(parts).replaceAll(schema, '<schema>');
  };
  const [expected, actual] = [await describe(template), await describe(copy)];
  if (expected !== actual) {
    throw new Error(
      'test/helpers/database.ts: a schema replayed from the migrations differs from the migrated template; ' +
        `the replay misses a statement.\ntemplate: ${expected}\ncopy:     ${actual}`,
    );
  }
}

/** `statement` with its $n parameters written in as literals (the replay is one simple query). */
function inlineParameters(statement: string, parameters: readonly unknown[]): string {
  if (parameters.length === 0) return statement;
  return statement.replace(/\$(\d+)/g, (_, n: string) => literal(parameters[Number(n) - 1]));
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (value instanceof Date) return pg.escapeLiteral(value.toISOString());
  throw new Error(`test/helpers/database.ts: cannot write a ${typeof value} parameter of a migration into SQL`);
}

/** `url` with its connections' search_path set to `schema`. */
function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  return parsed.toString();
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
