import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Imports of customers from CSV (docs/imports.md): each run with its counts and progress (what the
// CLI and the console show, surviving a reload), the emails a run has seen (a duplicate later in
// the same file is refused; constant memory however large the file), its refused rows, and the
// balances imported, one per customer and file name, so that running a file again, or finishing
// one that stopped half way, writes no balance twice. A balance imported with more points earned
// than it holds keeps the difference on the customer (`earned_before_import`): points earned are
// then the counted credits of the ledger plus that.

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  await db.schema
    .createTable('imports')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('running', 'finished', 'failed')`))
    .addColumn('bytes_total', big, (c) => c.notNull())
    .addColumn('bytes_read', big, (c) => c.notNull().defaultTo(0))
    .addColumn('rows', big, (c) => c.notNull().defaultTo(0))
    .addColumn('created', big, (c) => c.notNull().defaultTo(0))
    .addColumn('updated', big, (c) => c.notNull().defaultTo(0))
    .addColumn('unchanged', big, (c) => c.notNull().defaultTo(0))
    .addColumn('refused', big, (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('started_at', big, (c) => c.notNull())
    .addColumn('updated_at', big, (c) => c.notNull())
    .addColumn('finished_at', big)
    .execute();
  await db.schema.createIndex('imports_account').on('imports').columns(['account_id', 'id']).execute();
  await db.schema
    .createTable('import_emails')
    .addColumn('import_id', ref, (c) => c.notNull().references('imports.id').onDelete('cascade'))
    .addColumn('email_normalized', 'text', (c) => c.notNull())
    .addColumn('line', big, (c) => c.notNull())
    .addPrimaryKeyConstraint('import_emails_pkey', ['import_id', 'email_normalized'])
    .execute();
  await db.schema
    .createTable('import_refusals')
    .addColumn('import_id', ref, (c) => c.notNull().references('imports.id').onDelete('cascade'))
    .addColumn('line', big, (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('import_refusals_pkey', ['import_id', 'line'])
    .execute();
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
  await db.schema
    .alterTable('customers')
    .addColumn('earned_before_import', big, (c) => c.notNull().defaultTo(0).check(sql`earned_before_import >= 0`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('customers').dropColumn('earned_before_import').execute();
  await db.schema.dropTable('imported_balances').execute();
  await db.schema.dropTable('import_refusals').execute();
  await db.schema.dropTable('import_emails').execute();
  await db.schema.dropTable('imports').execute();
}
