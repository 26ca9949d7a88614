import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Db, openDb } from '../../src/storage/db.js';
import { testEngine } from '../helpers/app.js';

// The SQLite driver reads rows in raw mode and makes their objects itself (src/storage/sqlite-driver.ts):
// the objects must be exactly better-sqlite3's, whatever the columns, and stay right when another
// connection changes the schema under a prepared statement.

describe.skipIf(testEngine !== 'sqlite')('rows read from SQLite', () => {
  let dir: string;
  let db: Db;
  let kysely: Kysely<unknown>;
  /** better-sqlite3 alone, on the same file: the objects it makes are the reference. */
  let reference: SqliteDatabase.Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loyalty-rows-'));
    db = openDb(`sqlite:${join(dir, 'test.db')}`);
    kysely = db.kysely as Kysely<unknown>;
    await sql`create table a (id integer primary key, name text, "odd ""name""" text, n real)`.execute(kysely);
    await sql`create table b (id integer primary key, a_id integer, name text)`.execute(kysely);
    await sql`insert into a values (1, 'one', 'q', 1.5), (2, null, 'r', null)`.execute(kysely);
    await sql`insert into b values (10, 1, 'b-one')`.execute(kysely);
    reference = new SqliteDatabase(join(dir, 'test.db'));
  });
  afterEach(async () => {
    reference.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The statement's rows through the service's driver and through better-sqlite3 alone. */
  const both = async (text: string) => ({
    driver: (await sql.raw(text).execute(kysely)).rows,
    reference: reference.prepare(text).all(),
  });

  it('makes the objects better-sqlite3 makes: every type, null, odd and repeated names, expressions', async () => {
    for (const text of [
      'select * from a order by id',
      'select * from a join b on b.a_id = a.id',
      'select count(*), max(n) as "top", 1 + 1, \'x\' as "x y" from a',
      'select id as "__proto__x", name as "constructor", name as "toString" from a order by id',
      'select * from a where id = 99',
    ]) {
      const { driver, reference: expected } = await both(text);
      expect({ text, rows: driver }).toEqual({ text, rows: expected });
      for (const [i, row] of (driver as object[]).entries()) {
        expect(Object.keys(row)).toEqual(Object.keys((expected as object[])[i]!));
        expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
      }
    }
  });

  it('leaves a column named __proto__ to better-sqlite3, whose objects it makes', async () => {
    const { driver, reference: expected } = await both('select id, name as "__proto__" from a order by id');
    expect(driver).toEqual(expected);
    expect(Object.getOwnPropertyNames(driver[0])).toEqual(Object.getOwnPropertyNames(expected[0]));
    expect(Object.getPrototypeOf(driver[0])).toBe(Object.getPrototypeOf(expected[0]));
  });

  it('answers the rows of an insert … returning once, the insert made once', async () => {
    const { rows } = await sql`insert into b (a_id, name) values (2, 'b-two') returning id, name`.execute(kysely);
    expect(rows).toEqual([{ id: 11, name: 'b-two' }]);
    expect(reference.prepare('select count(*) as n from b').get()).toEqual({ n: 2 });
  });

  it('follows the schema when another connection adds or drops a column under a prepared statement', async () => {
    const select = () => sql`select * from a order by id`.execute(kysely);
    expect((await select()).rows[0]).toEqual({ id: 1, name: 'one', 'odd "name"': 'q', n: 1.5 });
    reference.exec("alter table a add column extra text default 'e'");
    expect((await select()).rows[0]).toEqual({ id: 1, name: 'one', 'odd "name"': 'q', n: 1.5, extra: 'e' });
    reference.exec('alter table a drop column name');
    expect((await select()).rows).toEqual(reference.prepare('select * from a order by id').all());
  });
});
