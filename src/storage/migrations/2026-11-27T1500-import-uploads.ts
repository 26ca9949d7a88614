import type { Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

// Files uploaded in the console for an import (docs/imports.md, "In the console"): kept in the
// database, in chunks, so that whichever process's job runner claims the import reads the same
// bytes, and so that a run stopped half way goes on from where its last batch ended (`bytes_read`
// is then the end of that batch's last row, `lines_read` the file's line it ended on, `columns`
// the header as mapped: what reading on from there needs).

export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const id = pg ? 'bigserial' : 'integer';
  const ref = pg ? 'bigint' : 'integer';
  const big = pg ? 'bigint' : 'integer';
  const primaryId = (c: any) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  await db.schema
    .createTable('import_uploads')
    .addColumn('id', id, primaryId)
    .addColumn('account_id', ref, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('bytes_total', big, (c) => c.notNull())
    .addColumn('delimiter', 'text', (c) => c.notNull())
    /** JSON array: the header's column names, as the file has them. */
    .addColumn('header', 'text', (c) => c.notNull())
    .addColumn('created_at', big, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('import_uploads_account').on('import_uploads').columns(['account_id', 'id']).execute();
  await db.schema
    .createTable('import_upload_chunks')
    .addColumn('upload_id', ref, (c) => c.notNull().references('import_uploads.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('data', pg ? 'bytea' : 'blob', (c) => c.notNull())
    .addPrimaryKeyConstraint('import_upload_chunks_pkey', ['upload_id', 'seq'])
    .execute();
  await db.schema
    .alterTable('imports')
    .addColumn('upload_id', ref, (c) => c.references('import_uploads.id').onDelete('set null'))
    .execute();
  await db.schema
    .alterTable('imports')
    .addColumn('lines_read', big, (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('imports').addColumn('columns', 'text').execute();
  await db.schema.createIndex('imports_upload').on('imports').columns(['upload_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('imports_upload').execute();
  await db.schema.alterTable('imports').dropColumn('columns').execute();
  await db.schema.alterTable('imports').dropColumn('lines_read').execute();
  await db.schema.alterTable('imports').dropColumn('upload_id').execute();
  await db.schema.dropTable('import_upload_chunks').execute();
  await db.schema.dropTable('import_uploads').execute();
}
