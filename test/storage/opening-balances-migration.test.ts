import type { Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrations } from '../../src/storage/migrations/index.js';
import { type MigratingDatabase, migratedBefore } from './migrating.js';

// Issue 49 point 3: balances imported before were kept once per customer and file *name*. The
// migration keeps one opening balance per customer, the sum of what every file credited them (a
// balance credited twice under two names is recognised as what it is), so that later imports
// refuse or correct it.

const OPENING = '2026-11-29T0000-opening-balances';

describe(`migration ${OPENING}`, () => {
  let migrating: MigratingDatabase | undefined;
  afterEach(async () => {
    await migrating?.db.close();
    await migrating?.database.drop();
  });

  it('recognises every customer who received an imported balance, under any file name', async () => {
    migrating = await migratedBefore(OPENING);
    // The tables as they were before the migration (imported_balances), which the schema no longer has.
    const kysely = migrating.kysely as Kysely<any>;
    const now = Date.UTC(2026, 0, 1);
    const { id: accountId } = await kysely
      .insertInto('accounts')
      .values({ name: 'Old shop', created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    const customer = async (email: string) =>
      (
        await kysely
          .insertInto('customers')
          .values({ account_id: accountId, email, email_normalized: email, created_at: now, updated_at: now })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    const ann = await customer('ann@old.example');
    const bob = await customer('bob@old.example');
    await customer('cy@old.example');
    const balance = (customerId: number, fileName: string, points: number, earned: number, at: number) => ({
      account_id: accountId,
      file_name: fileName,
      customer_id: customerId,
      points_balance: points,
      points_earned: earned,
      created_at: at,
    });
    await kysely
      .insertInto('imported_balances')
      .values([
        balance(ann, 'customers.csv', 250, 300, now),
        balance(ann, 'customers (1).csv', 250, 300, now + 1000),
        balance(bob, 'bob.csv', 100, 100, now + 500),
      ])
      .execute();

    await migrations[OPENING]!.up(kysely);
    const rows = await kysely
      .selectFrom('opening_balances')
      .select(['customer_id', 'account_id', 'import_id', 'file_name', 'line', 'points_balance', 'points_earned'])
      .orderBy('customer_id')
      .execute();
    expect(
      rows.map((row) =>
        Object.fromEntries(
          Object.entries(row).map(([k, v]) => [k, v === null ? null : typeof v === 'string' ? v : Number(v)]),
        ),
      ),
    ).toEqual([
      {
        customer_id: Number(ann),
        account_id: Number(accountId),
        import_id: null,
        file_name: 'customers.csv',
        line: null,
        points_balance: 500,
        points_earned: 600,
      },
      {
        customer_id: Number(bob),
        account_id: Number(accountId),
        import_id: null,
        file_name: 'bob.csv',
        line: null,
        points_balance: 100,
        points_earned: 100,
      },
    ]);
    // Once per customer, in the database.
    await expect(
      kysely
        .insertInto('opening_balances')
        .values({
          customer_id: ann,
          account_id: accountId,
          file_name: 'x.csv',
          points_balance: 1,
          points_earned: 1,
          created_at: now,
          updated_at: now,
        })
        .execute(),
    ).rejects.toThrow();
  });
});
