import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toContractError } from '../../src/error-mapping.js';
import { type Db, openDb } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type TestDatabaseUrl, testEngine } from '../helpers/app.js';

// Named (server-side prepared) statements on PostgreSQL (src/storage/postgres-statements.ts):
// a query with parameters is prepared once per connection, DATABASE_PREPARED_STATEMENTS=off
// prepares nothing, and a table that changes under a prepared `select *` costs at most the
// queries under way: the text runs unnamed from then on.

describe.skipIf(testEngine !== 'postgres')('named statements on PostgreSQL', () => {
  let database: TestDatabaseUrl;
  let db: Db;

  beforeEach(async () => {
    database = await createTestDatabaseUrl();
  });
  afterEach(async () => {
    await db?.close();
    await database.drop();
  });

  /** The statements prepared on the pool's one connection. */
  const prepared = async () =>
    (await sql<{ name: string }>`select name from pg_prepared_statements order by name`.execute(db.kysely)).rows.map(
      (row) => row.name,
    );

  const lookup = (id: number) => sql<Record<string, unknown>>`select * from notes where id = ${id}`.execute(db.kysely);

  it('prepares a query with parameters once, and runs it again by name', async () => {
    db = openDb(database.url, { poolMax: 1 });
    await sql`create table notes (id integer primary key, body text)`.execute(db.kysely);
    await sql`insert into notes values (${1}, ${'one'})`.execute(db.kysely);
    expect((await lookup(1)).rows).toEqual([{ id: 1, body: 'one' }]);
    const after = await prepared();
    expect(after.length).toBe(2);
    expect(after.every((name) => name.startsWith('loyalty_'))).toBe(true);
    expect((await lookup(1)).rows).toEqual([{ id: 1, body: 'one' }]);
    expect(await prepared()).toEqual(after);
  });

  it('prepares nothing with preparedStatements off', async () => {
    db = openDb(database.url, { poolMax: 1, preparedStatements: false });
    await sql`create table notes (id integer primary key, body text)`.execute(db.kysely);
    await sql`insert into notes values (${1}, ${'one'})`.execute(db.kysely);
    expect((await lookup(1)).rows).toEqual([{ id: 1, body: 'one' }]);
    expect(await prepared()).toEqual([]);
  });

  it('runs a text unnamed once its table changed shape under it', async () => {
    db = openDb(database.url, { poolMax: 1 });
    await sql`create table notes (id integer primary key, body text)`.execute(db.kysely);
    await sql`insert into notes values (${1}, ${'one'})`.execute(db.kysely);
    await lookup(1);
    await sql`alter table notes add column extra text`.execute(db.kysely);
    // The prepared `select *` would now return another shape: PostgreSQL refuses it once.
    const refused = await lookup(1).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: '0A000' });
    // Answered as a passing outage, which a retry gets past.
    expect(toContractError(refused).code).toBe('unavailable');
    expect((await lookup(1)).rows).toEqual([{ id: 1, body: 'one', extra: null }]);
  });
});
