import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compiledQuery, pick } from '../../src/storage/compiled-query.js';
import { createTestDb, type TestDb } from '../helpers/app.js';

// A query compiled once runs with each call's values, in and out of transactions, on the engine
// under test; a build that would bake a value into the SQL, alter it or let it pick the shape is
// refused at its first run instead of running with the first call's values.

describe('compiledQuery', () => {
  let test: TestDb;

  beforeEach(async () => {
    test = await createTestDb();
  });
  afterEach(() => test.destroy());

  const insertAccount = compiledQuery((db, v: { name: string; now: number }) =>
    db
      .insertInto('accounts')
      .values({ ...pick(v, ['name']), created_at: v.now })
      .returning(['id', 'name', 'created_at']),
  );
  const accountNamed = compiledQuery((db, v: { name: string }) =>
    db.selectFrom('accounts').select(['id', 'name']).where('name', '=', v.name).limit(1),
  );

  it('runs with each call’s own values, in a transaction too', async () => {
    const db = test.db.kysely;
    const [first] = await insertAccount(db, { name: 'First', now: 1000 });
    const [second] = await db.transaction().execute((trx) => insertAccount(trx, { name: 'Second', now: 2000 }));
    expect(first).toMatchObject({ name: 'First', created_at: 1000 });
    expect(second).toMatchObject({ name: 'Second', created_at: 2000 });
    expect(await accountNamed(db, { name: 'Second' })).toEqual([{ id: second?.id, name: 'Second' }]);
    expect(await accountNamed(db, { name: 'First' })).toEqual([{ id: first?.id, name: 'First' }]);
    expect(await accountNamed(db, { name: 'Nobody' })).toEqual([]);
  });

  it('refuses a value altered before it reaches the query', async () => {
    const altered = compiledQuery((db, v: { name: string }) =>
      db.selectFrom('accounts').select('id').where('name', '=', `${v.name}!`),
    );
    await expect(altered(test.db.kysely, { name: 'x' })).rejects.toThrow(/a constant made of a value/);
  });

  it('refuses a value that decides the shape, even when it is a parameter too', async () => {
    const shaped = compiledQuery((db, v: { name: string | null }) =>
      db
        .selectFrom('accounts')
        .select('id')
        .$if(v.name !== null, (query) => query.where('name', '=', v.name)),
    );
    await expect(shaped(test.db.kysely, { name: 'x' })).rejects.toThrow(/a value decides the shape/);
  });

  it('refuses values read as a whole rather than one by name', async () => {
    const whole = compiledQuery((db, v: { name: string; created_at: number }) =>
      db.insertInto('accounts').values(v).returning('id'),
    );
    await expect(whole(test.db.kysely, { name: 'x', created_at: 1 })).rejects.toThrow(/one by name/);
  });

  it('refuses to run without a value rather than bind undefined', async () => {
    const values = { name: undefined } as unknown as { name: string };
    await expect(accountNamed(test.db.kysely, values)).rejects.toThrow(/no value for name/);
  });

  it('refuses a value that decides the shape of the query', async () => {
    const shaped = compiledQuery((db, v: { name: string | null }) =>
      db
        .selectFrom('accounts')
        .select('id')
        .$if(v.name !== null, (query) => query.where('id', '>', 0)),
    );
    await expect(shaped(test.db.kysely, { name: null })).rejects.toThrow(/unchanged, as a parameter: name/);
    expect(await test.db.kysely.selectFrom('accounts').select('id').execute()).toEqual([]);
  });
});
