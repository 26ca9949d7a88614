import { Readable } from 'node:stream';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, ImportsTable } from '../storage/schema.js';
import type { CsvPosition } from './csv.js';
import type { ImportProgress } from './schemas.js';

/** Starts a run (of the console's upload `uploadId`, with its mapped `columns`); its id. */
export async function insertImport(
  db: Kysely<Database>,
  run: {
    accountId: number;
    fileName: string;
    bytesTotal: number;
    now: number;
    fileSha256: string | null;
    setBalances: boolean;
    uploadId?: number;
    columns?: readonly string[];
  },
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
      upload_id: run.uploadId ?? null,
      columns: run.columns === undefined ? null : JSON.stringify(run.columns),
      file_sha256: run.fileSha256,
      set_balances: run.setBalances ? 1 : 0,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** Adds a batch's counts to its run, and where its last row ends, in the batch's transaction. */
export async function addToImport(
  trx: Transaction<Database>,
  id: number,
  batch: {
    counts: { rows: number; created: number; updated: number; unchanged: number; refused: number };
    end: CsvPosition | undefined;
  },
  now: number,
): Promise<void> {
  const { counts, end } = batch;
  await trx
    .updateTable('imports')
    .set((eb) => ({
      ...(end === undefined ? {} : { bytes_read: end.bytes, lines_read: end.lines }),
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
  end: { status: 'finished' | 'failed'; error: string | null; now: number },
): Promise<void> {
  await db.deleteFrom('import_emails').where('import_id', '=', id).execute();
  await db
    .updateTable('imports')
    .set((eb) => ({
      status: end.status,
      error: end.error,
      bytes_read: end.status === 'finished' ? eb.ref('bytes_total') : eb.ref('bytes_read'),
      updated_at: end.now,
      finished_at: end.now,
    }))
    .where('id', '=', id)
    .execute();
}

/** A run, with what reading on needs: its upload, its mapped columns and where its last batch ended. */
export async function findImport(db: Kysely<Database>, id: number) {
  const row = await db.selectFrom('imports').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  return {
    accountId: Number(row.account_id),
    progress: toProgress(row),
    uploadId: row.upload_id === null ? null : Number(row.upload_id),
    columns: row.columns === null ? null : (JSON.parse(row.columns) as string[]),
    position: { bytes: Number(row.bytes_read), lines: Number(row.lines_read) } satisfies CsvPosition,
    fileSha256: row.file_sha256,
  };
}

/**
 * Notes that the run saw these emails (normalised), each on its row's line; answers, for each,
 * the line of the first row of the run that had it (its own line unless an earlier row had it).
 */
export async function claimEmails(
  trx: Transaction<Database>,
  importId: number,
  seen: readonly { email: string; line: number }[],
): Promise<Map<string, number>> {
  if (seen.length === 0) return new Map();
  await trx
    .insertInto('import_emails')
    .values(seen.map(({ email, line }) => ({ import_id: importId, email_normalized: email, line })))
    .onConflict((oc) => oc.doNothing())
    .execute();
  const first = await trx
    .selectFrom('import_emails')
    .select(['email_normalized', 'line'])
    .where('import_id', '=', importId)
    .where(
      'email_normalized',
      'in',
      seen.map(({ email }) => email),
    )
    .execute();
  return new Map(first.map((row) => [row.email_normalized, Number(row.line)]));
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

/** The run's refused rows after `afterLine`, by line. */
export async function findRefusals(
  db: Kysely<Database>,
  importId: number,
  page: { afterLine: number; limit: number },
): Promise<{ line: number; message: string }[]> {
  const rows = await db
    .selectFrom('import_refusals')
    .select(['line', 'message'])
    .where('import_id', '=', importId)
    .where('line', '>', page.afterLine)
    .orderBy('line')
    .limit(page.limit)
    .execute();
  return rows.map((row) => ({ line: Number(row.line), message: row.message }));
}

/** A customer's imported opening balance, and the run, file and line that brought it. */
export interface OpeningBalance {
  readonly customerId: number;
  readonly importId: number | null;
  readonly fileName: string;
  readonly fileSha256: string | null;
  readonly line: number | null;
  readonly pointsBalance: number;
  readonly pointsEarned: number;
}

/** Where a balance comes from: the run, its file, the row's line. */
export interface BalanceSource {
  readonly importId: number | null;
  readonly fileName: string;
  readonly fileSha256: string | null;
}

/**
 * Claims the opening balance of customers the caller locked, once per customer (the table's key:
 * two imports racing cannot both claim one); a balance of 0 with 0 points earned claims nothing.
 * Answers those claimed now and, for the others, the opening balance they already have.
 */
export async function claimOpeningBalances(
  trx: Transaction<Database>,
  accountId: number,
  source: BalanceSource,
  balances: readonly { customerId: number; line: number; pointsBalance: number; pointsEarned: number }[],
  now: number,
): Promise<{ claimed: Set<number>; earlier: Map<number, OpeningBalance> }> {
  const some = balances.filter((balance) => balance.pointsBalance > 0 || balance.pointsEarned > 0);
  const rows =
    some.length === 0
      ? []
      : await trx
          .insertInto('opening_balances')
          .values(
            some.map((balance) => ({
              customer_id: balance.customerId,
              account_id: accountId,
              ...openingFields(source, balance, now),
              created_at: now,
            })),
          )
          .onConflict((oc) => oc.column('customer_id').doNothing())
          .returning('customer_id')
          .execute();
  const claimed = new Set(rows.map((row) => Number(row.customer_id)));
  const others = balances.map((b) => b.customerId).filter((id) => !claimed.has(id));
  if (others.length === 0) return { claimed, earlier: new Map() };
  const found = await trx.selectFrom('opening_balances').selectAll().where('customer_id', 'in', others).execute();
  const earlier = new Map(
    found.map((row) => [
      Number(row.customer_id),
      {
        customerId: Number(row.customer_id),
        importId: row.import_id === null ? null : Number(row.import_id),
        fileName: row.file_name,
        fileSha256: row.file_sha256,
        line: row.line === null ? null : Number(row.line),
        pointsBalance: Number(row.points_balance),
        pointsEarned: Number(row.points_earned),
      },
    ]),
  );
  return { claimed, earlier };
}

/** The columns of an opening balance that say what brought it, and when. */
function openingFields(
  source: BalanceSource,
  balance: { line: number; pointsBalance: number; pointsEarned: number },
  now: number,
) {
  return {
    import_id: source.importId,
    file_name: source.fileName,
    file_sha256: source.fileSha256,
    line: balance.line,
    points_balance: balance.pointsBalance,
    points_earned: balance.pointsEarned,
    updated_at: now,
  };
}

/** Sets customers' opening balances to a later file's (the ledger took the difference in the same transaction). */
export async function replaceOpeningBalances(
  trx: Transaction<Database>,
  source: BalanceSource,
  balances: readonly { customerId: number; line: number; pointsBalance: number; pointsEarned: number }[],
  now: number,
): Promise<void> {
  // Rare (a run that sets balances, on customers who have one): a statement each.
  for (const balance of balances) {
    await trx
      .updateTable('opening_balances')
      .set(openingFields(source, balance, now))
      .where('customer_id', '=', balance.customerId)
      .execute();
  }
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
    setBalances: Number(row.set_balances) === 1,
  };
}

/** Starts keeping an upload (described once its bytes are in); its id. */
export async function insertUpload(
  db: Kysely<Database>,
  upload: { accountId: number; fileName: string; now: number },
): Promise<number> {
  const row = await db
    .insertInto('import_uploads')
    .values({
      account_id: upload.accountId,
      file_name: upload.fileName,
      bytes_total: 0,
      delimiter: ',',
      header: '[]',
      created_at: upload.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function insertUploadChunk(db: Kysely<Database>, uploadId: number, seq: number, data: Buffer) {
  await db.insertInto('import_upload_chunks').values({ upload_id: uploadId, seq, data }).execute();
}

/** An upload's size, separator and header, once its bytes are in. */
export async function describeUpload(
  db: Kysely<Database>,
  id: number,
  file: { bytesTotal: number; delimiter: ',' | ';'; names: readonly string[]; sha256: string },
): Promise<void> {
  await db
    .updateTable('import_uploads')
    .set({
      bytes_total: file.bytesTotal,
      delimiter: file.delimiter,
      header: JSON.stringify(file.names),
      sha256: file.sha256,
    })
    .where('id', '=', id)
    .execute();
}

export async function findUpload(db: Kysely<Database>, id: number) {
  const row = await db.selectFrom('import_uploads').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  return {
    id: Number(row.id),
    accountId: Number(row.account_id),
    fileName: row.file_name,
    bytesTotal: Number(row.bytes_total),
    delimiter: row.delimiter,
    names: JSON.parse(row.header) as string[],
    sha256: row.sha256,
  };
}

/** An upload and its bytes (a run that read it keeps its counts). */
export async function deleteUpload(db: Kysely<Database>, id: number): Promise<void> {
  await deleteUploadChunks(db, id);
  await db.deleteFrom('import_uploads').where('id', '=', id).execute();
}

/** An upload's bytes, once read to the end. */
export async function deleteUploadChunks(db: Kysely<Database>, id: number): Promise<void> {
  await db.deleteFrom('import_upload_chunks').where('upload_id', '=', id).execute();
}

/** The account's uploads made before `before` whose mapping never started a run (a step left half way). */
export async function deleteAbandonedUploads(db: Kysely<Database>, accountId: number, before: number) {
  const abandoned = await db
    .selectFrom('import_uploads')
    .select('id')
    .where('account_id', '=', accountId)
    .where('created_at', '<', before)
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('imports').select('id').whereRef('upload_id', '=', 'import_uploads.id'))),
    )
    .execute();
  for (const { id } of abandoned) await deleteUpload(db, Number(id));
}

/**
 * An upload's bytes from `from` on, read a chunk per statement (`chunkBytes` each, the last
 * shorter): memory holds one chunk however large the file.
 */
export function uploadStream(db: Kysely<Database>, uploadId: number, from: number, chunkBytes: number): Readable {
  return Readable.from(
    (async function* () {
      let skip = from % chunkBytes;
      for (let seq = Math.floor(from / chunkBytes); ; seq++) {
        const row = await db
          .selectFrom('import_upload_chunks')
          .select('data')
          .where('upload_id', '=', uploadId)
          .where('seq', '=', seq)
          .executeTakeFirst();
        if (!row) return;
        const data = Buffer.from(row.data);
        yield skip === 0 ? data : data.subarray(skip);
        skip = 0;
      }
    })(),
  );
}
