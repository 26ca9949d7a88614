import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Issue 49 point 3: an imported balance was written once per customer and file *name*, so the same
// rows under another name (or a re-imported export) credited every balance again, and a second
// file with the name of an earlier one had its balances ignored. A customer's opening balance is
// now imported once per customer: `opening_balances` holds one row per customer (its primary key,
// so that two imports racing cannot both credit), with the import and line that brought it (a run
// resumed after a crash, or the same bytes run again, knows its own balances: same run, same
// SHA-256 of the file) and the balance and points earned it brought, what setting balances to a
// later file's corrects from. Customers who received imported balances before are recognised:
// their row holds what every earlier file credited them (the sum: a customer whose balance the old
// rule credited twice holds both, and setting balances takes back the difference).

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';

  await db.schema
    .createTable('opening_balances')
    .addColumn('customer_id', ref, (c) => c.primaryKey().references('customers.id').onDelete('cascade'))
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('import_id', ref, (c) => c.references('imports.id').onDelete('set null'))
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('file_sha256', 'text')
    .addColumn('line', big)
    .addColumn('points_balance', big, (c) => c.notNull().check(sql`points_balance >= 0`))
    .addColumn('points_earned', big, (c) => c.notNull().check(sql`points_earned >= 0`))
    .addColumn('created_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .execute();
  // The earliest file names the import (its import and line were not kept); the balances are summed.
  await sql`
    insert into opening_balances
      (customer_id, account_id, import_id, file_name, file_sha256, line, points_balance, points_earned,
       created_at, updated_at)
    select b.customer_id, min(b.account_id), null,
      (select e.file_name from imported_balances e where e.customer_id = b.customer_id
        order by e.created_at, e.file_name limit 1),
      null, null, sum(b.points_balance), sum(b.points_earned), min(b.created_at), max(b.created_at)
    from imported_balances b
    group by b.customer_id
  `.execute(db);
  await db.schema.dropTable('imported_balances').execute();
  await db.schema.alterTable('imports').addColumn('file_sha256', 'text').execute();
  await db.schema
    .alterTable('imports')
    .addColumn('set_balances', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('import_uploads').addColumn('sha256', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';
  await db.schema.alterTable('import_uploads').dropColumn('sha256').execute();
  await db.schema.alterTable('imports').dropColumn('set_balances').execute();
  await db.schema.alterTable('imports').dropColumn('file_sha256').execute();
  await db.schema
    .createTable('imported_balances')
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('customer_id', ref, (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('points_balance', big, (c) => c.notNull())
    .addColumn('points_earned', big, (c) => c.notNull())
    .addColumn('created_at', big, (c) => c.notNull())
    .addPrimaryKeyConstraint('imported_balances_pkey', ['account_id', 'file_name', 'customer_id'])
    .execute();
  await sql`
    insert into imported_balances (account_id, file_name, customer_id, points_balance, points_earned, created_at)
    select account_id, file_name, customer_id, points_balance, points_earned, created_at from opening_balances
  `.execute(db);
  await db.schema.dropTable('opening_balances').execute();
}
