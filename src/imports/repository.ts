import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, ImportsTable } from '../storage/schema.js';
import type { ImportProgress } from './schemas.js';

/** Starts a run; its id. */
export async function insertImport(
  db: Kysely<Database>,
  run: { accountId: number; fileName: string; bytesTotal: number; now: number },
): Promise<number> {
  const row = await db
    .insertInto('imports')
    .values({
      account_id: run.accountId,
      file_name: run.fileName,
      status: 'running',
      bytes_total: run.bytesTotal,
      started_at: run.now,
      updated_at: run.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** Adds a batch's counts to its run, in the batch's transaction. */
export async function addToImport(
  trx: Transaction<Database>,
  id: number,
  counts: { bytesRead: number; rows: number; created: number; updated: number; unchanged: number; refused: number },
  now: number,
): Promise<void> {
  await trx
    .updateTable('imports')
    .set((eb) => ({
      bytes_read: counts.bytesRead,
      rows: eb('rows', '+', counts.rows),
      created: eb('created', '+', counts.created),
      updated: eb('updated', '+', counts.updated),
      unchanged: eb('unchanged', '+', counts.unchanged),
      refused: eb('refused', '+', counts.refused),
      updated_at: now,
    }))
    .where('id', '=', id)
    .execute();
}

/** Ends a run: finished (every byte read), or failed with why; the emails it saw are let go. */
export async function finishImport(
  db: Kysely<Database>,
  id: number,
  end: { status: 'finished' | 'failed'; error: string | null; bytesRead: number; now: number },
): Promise<void> {
  await db.deleteFrom('import_emails').where('import_id', '=', id).execute();
  await db
    .updateTable('imports')
    .set({ status: end.status, error: end.error, bytes_read: end.bytesRead, updated_at: end.now, finished_at: end.now })
    .where('id', '=', id)
    .execute();
}

/**
 * Notes that the run saw this email on `line`; the line of its first row when an earlier row of
 * the run had it (then nothing is written).
 */
export async function claimEmail(
  trx: Transaction<Database>,
  importId: number,
  emailNormalized: string,
  line: number,
): Promise<number | undefined> {
  const inserted = await trx
    .insertInto('import_emails')
    .values({ import_id: importId, email_normalized: emailNormalized, line })
    .onConflict((oc) => oc.doNothing())
    .returning('line')
    .executeTakeFirst();
  if (inserted) return undefined;
  const first = await trx
    .selectFrom('import_emails')
    .select('line')
    .where('import_id', '=', importId)
    .where('email_normalized', '=', emailNormalized)
    .executeTakeFirstOrThrow();
  return Number(first.line);
}

export async function insertRefusals(
  trx: Transaction<Database>,
  importId: number,
  refusals: readonly { line: number; message: string }[],
): Promise<void> {
  if (refusals.length === 0) return;
  await trx
    .insertInto('import_refusals')
    .values(refusals.map((r) => ({ import_id: importId, line: r.line, message: r.message })))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** The run's refused rows, by line. */
export async function findRefusals(db: Kysely<Database>, importId: number) {
  const rows = await db
    .selectFrom('import_refusals')
    .select(['line', 'message'])
    .where('import_id', '=', importId)
    .orderBy('line')
    .execute();
  return rows.map((row) => ({ line: Number(row.line), message: row.message }));
}

/**
 * Notes that the customer's balance from this file was imported; false when it already was (the
 * same file run again, or finished after it stopped half way): then nothing is written.
 */
export async function claimImportedBalance(
  trx: Transaction<Database>,
  balance: { accountId: number; fileName: string; customerId: number; pointsBalance: number; pointsEarned: number },
  now: number,
): Promise<boolean> {
  const row = await trx
    .insertInto('imported_balances')
    .values({
      account_id: balance.accountId,
      file_name: balance.fileName,
      customer_id: balance.customerId,
      points_balance: balance.pointsBalance,
      points_earned: balance.pointsEarned,
      created_at: now,
    })
    .onConflict((oc) => oc.doNothing())
    .returning('customer_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** The account's latest runs, newest first. */
export async function findImports(db: Kysely<Database>, accountId: number, limit: number): Promise<ImportProgress[]> {
  const rows = await db
    .selectFrom('imports')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toProgress);
}

function toProgress(row: Selectable<ImportsTable>): ImportProgress {
  return {
    id: Number(row.id),
    fileName: row.file_name,
    status: row.status,
    bytesRead: Number(row.bytes_read),
    bytesTotal: Number(row.bytes_total),
    rows: Number(row.rows),
    created: Number(row.created),
    updated: Number(row.updated),
    unchanged: Number(row.unchanged),
    refused: Number(row.refused),
    error: row.error,
    startedAt: Number(row.started_at),
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
  };
}
