import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import type { CustomerIdentitiesService } from '../customer-identities/service.js';
import type { CustomersService, LockedCustomer } from '../customers/service.js';
import { normalizeEmail } from '../email.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import type { JobHandler, JobsService } from '../jobs/service.js';
import type { LedgerEntry, PointsTransactionsService } from '../points-transactions/service.js';
import type { Database } from '../storage/schema.js';
import { refreshStatistics } from '../storage/statistics.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import type { VipTiersService } from '../vip-tiers/service.js';
import { CsvFileError, type CsvHeader, type CsvPosition, type CsvRow, readCsv } from './csv.js';
import { cellRefusal, fileProblem, formulaRefusal, mapRefusal, NO_EMAIL, oneOf, quoted } from './refusals.js';
import {
  addToImport,
  type BalanceSource,
  claimEmails,
  claimOpeningBalances,
  deleteAbandonedUploads,
  deleteUpload,
  deleteUploadChunks,
  describeUpload,
  findImport,
  findImports,
  findRefusals,
  findUpload,
  finishImport,
  insertImport,
  insertRefusals,
  insertUpload,
  insertUploadChunk,
  type OpeningBalance,
  replaceOpeningBalances,
  uploadStream,
} from './repository.js';
import { IMPORT_COLUMNS, type ImportProgress, ImportRow, type ImportSummary } from './schemas.js';

/** Rows applied per transaction: short ones, that never hold the API back for long. */
const BATCH = 200;
/**
 * Batches between two refreshes of the planner's statistics: the tables an import fills grow from
 * nothing to millions of rows, and a plan made when they were small reads them whole.
 */
const STATISTICS_EVERY = 25;
/** Cells that a spreadsheet would run as a formula. */
const FORMULA = /^[=+\-@\t\r]/;
const TEXT_COLUMNS = ['first_name', 'last_name', 'distinct_id'] as const;
const NUMBER_COLUMNS = ['points_balance', 'points_earned'] as const;
/** The job runner's queue of the console's imports. */
export const IMPORTS_QUEUE = 'imports';
/**
 * How long one run of an import's job reads before it lets the runner schedule the rest (its
 * lease is 30 s): real time, as the lease's is in production, not the injected clock.
 */
const STEP_BUDGET_MS = 10_000;
/** The most an upload may hold (larger files go through the CLI, which reads them from disk). */
export const MAX_UPLOAD_BYTES = 100 * 1024 ** 2;
/** Bytes of an uploaded file per stored chunk. */
const CHUNK_BYTES = 1024 * 1024;
/** The most a check of an upload reads (the console's "Check without importing"): its request waits. */
export const CHECK_BUDGET_MS = 10_000;
/** An upload whose columns were never mapped is deleted at the account's next upload after this long. */
const ABANDONED_AFTER_MS = 24 * 60 * 60 * 1000;

/** What an import is asked to do besides its file. */
export interface ImportOptions {
  /** Column names of the file renamed to the import's (`--map 'Old=new'`). */
  readonly rename?: ReadonlyMap<string, string>;
  /** Checks every row and writes nothing. */
  readonly dryRun?: boolean;
  /**
   * Sets the opening balance of customers who already have an imported one to the file's (one
   * ledger entry of the difference) instead of refusing their rows.
   */
  readonly setBalances?: boolean;
  /** Hears the run's progress after every batch. */
  readonly onProgress?: (progress: ImportProgress) => void;
}

/** A row that passed the checks, with its line. */
interface CheckedRow {
  readonly line: number;
  readonly row: ImportRow;
}

type Outcome = 'created' | 'updated' | 'unchanged';
type Result = { line: number; outcome: Outcome } | { line: number; refused: string };

/** A batch's results counted, with where its last row ends. */
interface BatchRecord {
  counts: { rows: number; created: number; updated: number; unchanged: number; refused: number };
  refusals: { line: number; message: string }[];
  end: CsvPosition | undefined;
}

/** One run of an import: its account, its file, its row in `imports` (none for a dry run). */
interface Run {
  readonly accountId: number;
  readonly fileName: string;
  /** The file's SHA-256: its balances are its own when the same bytes are run again (a run finished after a crash). */
  readonly fileSha256: string | null;
  readonly importId: number | null;
  readonly dryRun: boolean;
  readonly setBalances: boolean;
  /** A dry run's emails (it writes nothing, not even the emails it saw). */
  readonly seen: Map<string, number>;
}

/** Stops a dry run's transaction once it knows what its rows would do. */
class DryRun extends Error {
  constructor(readonly results: Result[]) {
    super('dry run');
  }
}

type ImportRefusal = ImportSummary['refusals'][number];

/** What an upload's import would do: a dry run's summary, and how far it read. */
export interface ImportCheck extends ImportSummary {
  /** Whether it read the whole file (else it stopped at its time budget, after `linesRead`). */
  readonly complete: boolean;
  /** The line the last row it read ends on. */
  readonly linesRead: number;
}

/** A file uploaded in the console, before its columns are mapped. */
export interface UploadedFile {
  readonly id: number;
  readonly fileName: string;
  readonly bytesTotal: number;
  /** Its header's column names, as the file has them. */
  readonly names: readonly string[];
}

/**
 * Imports of customers with their balances from CSV (docs/imports.md): rows matched by email,
 * streamed in batches of short transactions; a refused row never stops the others; running a
 * file again changes nothing, and finishes a run that stopped half way. The CLI reads its file
 * in its own process; the console's uploads are kept in the database and read by a job, a step
 * at a time, each step going on from where the last committed batch ended.
 */
export class ImportsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
    private readonly customers: CustomersService,
    private readonly ledger: PointsTransactionsService,
    private readonly vipTiers: VipTiersService,
    private readonly identities: CustomerIdentitiesService,
    private readonly jobs: JobsService,
  ) {}

  /** The account's latest runs, newest first. */
  async recent(accountId: number, limit = 10): Promise<ImportProgress[]> {
    return findImports(this.db, accountId, limit);
  }

  /** The account's run `id`; `404 not_found` for another account's. */
  async progress(accountId: number, id: number): Promise<ImportProgress> {
    const run = await findImport(this.db, id);
    if (!run || run.accountId !== accountId) throw notFound(`import ${id} does not exist`);
    return run.progress;
  }

  /** The run's refused rows after `afterLine`, by line, `limit` at most. */
  refusals(importId: number, afterLine: number, limit: number): Promise<{ line: number; message: string }[]> {
    return findRefusals(this.db, importId, { afterLine, limit });
  }

  /**
   * Imports the customers of the CSV file at `path` into the account. A customer's opening balance
   * is imported once, whatever the file is called: a row bringing one to a customer who has one is
   * refused, unless `setBalances`.
   */
  async importCustomers(accountId: number, path: string, options: ImportOptions = {}): Promise<ImportSummary> {
    await this.accounts.require(accountId);
    const fileName = basename(path);
    let bytesTotal: number;
    let fileSha256: string;
    try {
      bytesTotal = (await stat(path)).size;
      const hash = createHash('sha256');
      for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
      fileSha256 = hash.digest('hex');
    } catch (error) {
      throw invalidParameter('file', `cannot be read: ${fileProblem(error, path)}`);
    }
    const dryRun = options.dryRun === true;
    const setBalances = options.setBalances === true;
    const startedAt = this.clock.now();
    const importId = dryRun
      ? null
      : await insertImport(this.db, { accountId, fileName, bytesTotal, fileSha256, setBalances, now: startedAt });
    const run: Run = { accountId, fileName, fileSha256, importId, dryRun, setBalances, seen: new Map() };
    const progress = {
      id: importId,
      fileName,
      status: 'running' as ImportProgress['status'],
      bytesRead: 0,
      bytesTotal,
      rows: 0,
      created: 0,
      updated: 0,
      unchanged: 0,
      refused: 0,
      error: null as string | null,
      startedAt,
      finishedAt: null as number | null,
      setBalances,
    };
    const refusals: { line: number; message: string }[] = [];
    const rows = readCsv(createReadStream(path), {
      rename: options.rename ?? new Map(),
      onHeader: (header) => {
        checkRenames(header.names, options.rename ?? new Map());
        checkHeader(header.columns);
      },
    });
    await this.failOnError(run, async () =>
      this.readRows(run, rows, Number.POSITIVE_INFINITY, (batch) => {
        if (importId === null) refusals.push(...batch.refusals);
        progress.bytesRead = batch.end?.bytes ?? progress.bytesRead;
        progress.rows += batch.counts.rows;
        progress.created += batch.counts.created;
        progress.updated += batch.counts.updated;
        progress.unchanged += batch.counts.unchanged;
        progress.refused += batch.counts.refused;
        options.onProgress?.({ ...progress, bytesRead: Math.min(progress.bytesRead, bytesTotal) });
      }),
    );
    progress.status = 'finished';
    progress.finishedAt = this.clock.now();
    if (importId !== null) {
      await finishImport(this.db, importId, { status: 'finished', error: null, now: progress.finishedAt });
    }
    const { rows: count, created, updated, unchanged, refused } = progress;
    const listed =
      importId === null
        ? refusals.sort((a, b) => a.line - b.line)
        : await findRefusals(this.db, importId, { afterLine: 0, limit: Number.MAX_SAFE_INTEGER });
    return { rows: count, created, updated, unchanged, refused, refusals: listed };
  }

  /**
   * Keeps a file uploaded in the console (chunk by chunk, each in a short transaction) and reads its
   * header, for the mapping step. `input` ends early (`truncated`) past MAX_UPLOAD_BYTES.
   */
  async upload(accountId: number, fileName: string, input: Readable, truncated: () => boolean): Promise<UploadedFile> {
    await this.accounts.require(accountId);
    const name = basename(fileName.replaceAll('\\', '/')).slice(0, 255) || 'upload.csv';
    const now = this.clock.now();
    await deleteAbandonedUploads(this.db, accountId, now - ABANDONED_AFTER_MS);
    const uploadId = await insertUpload(this.db, { accountId, fileName: name, now });
    let stored = 0;
    const hash = createHash('sha256');
    try {
      let seq = 0;
      // The parts received since the last stored chunk, copied once into the chunk they make.
      let parts: Buffer[] = [];
      let pending = 0;
      for await (const part of input) {
        hash.update(part as Buffer);
        parts.push(part as Buffer);
        pending += (part as Buffer).length;
        // Chunks of exactly CHUNK_BYTES (the last shorter): a byte's chunk is its offset / CHUNK_BYTES.
        while (pending >= CHUNK_BYTES) {
          const joined = Buffer.concat(parts, pending);
          await insertUploadChunk(this.db, uploadId, seq++, joined.subarray(0, CHUNK_BYTES));
          stored += CHUNK_BYTES;
          parts = [joined.subarray(CHUNK_BYTES)];
          pending -= CHUNK_BYTES;
        }
      }
      if (pending > 0) {
        await insertUploadChunk(this.db, uploadId, seq++, Buffer.concat(parts, pending));
        stored += pending;
      }
      if (truncated()) {
        throw new DomainError(
          'payload_too_large',
          `file is larger than ${MAX_UPLOAD_BYTES / 1024 ** 2} MiB: split it, or import it with the CLI (loyalty import customers)`,
        );
      }
      let header: CsvHeader | undefined;
      try {
        for await (const _ of readCsv(uploadStream(this.db, uploadId, 0, CHUNK_BYTES), {
          rename: new Map(),
          onHeader: (read) => {
            header = read;
          },
        })) {
          break;
        }
      } catch (error) {
        if (error instanceof CsvFileError || (error instanceof Error && error.name === 'CsvError')) {
          throw invalidParameter('file', error.message);
        }
        throw error;
      }
      if (!header || header.names.length === 0) {
        throw invalidParameter('file', 'is empty: the first line must name the columns');
      }
      await describeUpload(this.db, uploadId, {
        bytesTotal: stored,
        delimiter: header.delimiter,
        names: header.names,
        sha256: hash.digest('hex'),
      });
      return { id: uploadId, fileName: name, bytesTotal: stored, names: header.names };
    } catch (error) {
      await deleteUpload(this.db, uploadId);
      throw error;
    }
  }

  /** The account's upload `id`, waiting for its mapping; `404 not_found` for another account's. */
  async uploaded(accountId: number, id: number): Promise<UploadedFile> {
    const upload = await findUpload(this.db, id);
    if (!upload || upload.accountId !== accountId) throw notFound(`upload ${id} does not exist`);
    return { id, fileName: upload.fileName, bytesTotal: upload.bytesTotal, names: upload.names };
  }

  /**
   * Starts the import of an upload with its columns mapped (`mapping[i]`: the import column the
   * file's i-th column is read as, '' to ignore it), setting balances to the file's with
   * `setBalances`; answers the run's id. The run is a job: any process's runner reads it.
   */
  async start(
    accountId: number,
    uploadId: number,
    mapping: readonly string[],
    options: Pick<ImportOptions, 'setBalances'> = {},
  ): Promise<number> {
    const upload = await this.uploaded(accountId, uploadId);
    const { sha256 } = (await findUpload(this.db, uploadId))!;
    const columns = mappedColumns(upload, mapping);
    return this.uow.run(async (w) => {
      const importId = await insertImport(w.trx, {
        accountId,
        fileName: upload.fileName,
        bytesTotal: upload.bytesTotal,
        fileSha256: sha256,
        setBalances: options.setBalances === true,
        now: w.now,
        uploadId,
        columns,
      });
      await this.jobs.enqueue(w, [{ queue: IMPORTS_QUEUE, accountId, subjectId: importId }]);
      return importId;
    });
  }

  /**
   * What the import of an upload with `mapping` would do (the console's "Check without
   * importing"): its rows checked and applied as a run applies them, each batch in a transaction
   * rolled back (the CLI's --dry-run), so nothing is written. The request waits for it: it reads
   * for `budgetMs` at most, and says whether it reached the end of the file. Its refusals are the
   * first `refusalsKept`, by line; `refused` counts them all.
   */
  async check(
    accountId: number,
    uploadId: number,
    mapping: readonly string[],
    options: Pick<ImportOptions, 'setBalances'> & { budgetMs?: number; refusalsKept?: number } = {},
  ): Promise<ImportCheck> {
    const upload = await this.uploaded(accountId, uploadId);
    const { sha256 } = (await findUpload(this.db, uploadId))!;
    const columns = mappedColumns(upload, mapping);
    const run: Run = {
      accountId,
      fileName: upload.fileName,
      fileSha256: sha256,
      importId: null,
      dryRun: true,
      setBalances: options.setBalances === true,
      seen: new Map(),
    };
    // Read as the run's job reads it (step), so that both see the same rows.
    const rows = readCsv(uploadStream(this.db, upload.id, 0, CHUNK_BYTES), {
      rename: new Map(upload.names.map((name, i) => [name, columns[i] ?? name])),
      onHeader: (header) => checkHeader(header.columns),
    });
    const kept = options.refusalsKept ?? Number.POSITIVE_INFINITY;
    const check = { rows: 0, created: 0, updated: 0, unchanged: 0, refused: 0, refusals: [] as ImportRefusal[] };
    let linesRead = 1;
    const complete = await this.failOnError(run, () =>
      this.readRows(run, rows, performance.now() + (options.budgetMs ?? CHECK_BUDGET_MS), (batch) => {
        for (const count of ['rows', 'created', 'updated', 'unchanged', 'refused'] as const) {
          check[count] += batch.counts[count];
        }
        const room = kept - check.refusals.length;
        if (room > 0) check.refusals.push(...batch.refusals.sort((a, b) => a.line - b.line).slice(0, room));
        linesRead = batch.end?.lines ?? linesRead;
      }),
    );
    return { ...check, complete, linesRead };
  }

  /**
   * The first `count` rows of an upload's file, each its cells in the file's order (the mapping
   * step's samples); a row that cannot be read is left out.
   */
  async samples(accountId: number, uploadId: number, count: number): Promise<string[][]> {
    await this.uploaded(accountId, uploadId);
    const samples: string[][] = [];
    let read = 0;
    try {
      for await (const row of readCsv(uploadStream(this.db, uploadId, 0, CHUNK_BYTES), {
        rename: new Map(),
        onHeader: () => undefined,
      })) {
        if (row.error === undefined) samples.push([...row.texts]);
        if (++read >= count) break;
      }
    } catch (error) {
      // The header was read when the file was uploaded: a file that fails later still maps.
      if (!(error instanceof CsvFileError || (error instanceof Error && error.name === 'CsvError'))) throw error;
    }
    return samples;
  }

  /** The job of the console's imports: a step of a run (STEP_BUDGET_MS of reading), then the rest as another run. */
  job(): JobHandler {
    return {
      queue: IMPORTS_QUEUE,
      run: async (job) => {
        const finished = await this.step(job.subjectId!, performance.now() + STEP_BUDGET_MS);
        return finished ? { done: true } : { runAt: this.clock.now() };
      },
    };
  }

  /**
   * Reads a run on from where its last batch ended, until the file ends (then it is finished and
   * its upload let go) or `until` (performance.now()) passes; whether it is over.
   */
  async step(importId: number, until: number): Promise<boolean> {
    const found = await findImport(this.db, importId);
    if (found?.progress.status !== 'running' || found.uploadId === null || found.columns === null) {
      return true;
    }
    const upload = await findUpload(this.db, found.uploadId);
    if (!upload) {
      await finishImport(this.db, importId, {
        status: 'failed',
        error: 'its upload was deleted',
        now: this.clock.now(),
      });
      return true;
    }
    const { progress, position, columns } = found;
    const run: Run = {
      accountId: upload.accountId,
      fileName: progress.fileName,
      fileSha256: found.fileSha256,
      importId,
      dryRun: false,
      setBalances: progress.setBalances,
      seen: new Map(),
    };
    const fresh = position.bytes === 0;
    const rows = readCsv(uploadStream(this.db, upload.id, position.bytes, CHUNK_BYTES), {
      // From the start, the header is read again, and renamed as it was mapped.
      rename: new Map(upload.names.map((name, i) => [name, columns[i] ?? name])),
      onHeader: (header) => checkHeader(header.columns),
      ...(fresh ? {} : { from: { ...position, delimiter: upload.delimiter, columns } }),
    });
    let ended: boolean;
    try {
      ended = await this.failOnError(run, () => this.readRows(run, rows, until, () => undefined), true);
    } catch (error) {
      // A file that cannot be read is over (the run says why); anything else is tried again.
      if (isRowRefusal(error)) return true;
      throw error;
    }
    if (!ended) return false;
    await finishImport(this.db, importId, { status: 'finished', error: null, now: this.clock.now() });
    await deleteUploadChunks(this.db, upload.id);
    return true;
  }

  /**
   * Runs `read`; a failure of the whole file marks the run failed and is the contract's error.
   * With `retried`, any other failure (the database gone for a moment) leaves the run running: its
   * job is tried again after a pause and goes on from its last committed batch.
   */
  private async failOnError<T>(run: Run, read: () => Promise<T>, retried = false): Promise<T> {
    try {
      return await read();
    } catch (error) {
      const fileError =
        isRowRefusal(error) || error instanceof CsvFileError || (error instanceof Error && error.name === 'CsvError');
      if (run.importId !== null && (fileError || !retried)) {
        const message = error instanceof Error ? error.message : String(error);
        await finishImport(this.db, run.importId, { status: 'failed', error: message, now: this.clock.now() });
      }
      if (error instanceof DomainError || !fileError) throw error;
      throw invalidParameter('file', (error as Error).message);
    }
  }

  /**
   * Applies `rows` a batch at a time until they end (true) or `until` (performance.now()) passes
   * after a batch (false). A batch is cut after a row that knows where it ends, so that the run's
   * position is exact; `onBatch` hears each one once it committed.
   */
  private async readRows(
    run: Run,
    rows: AsyncIterable<CsvRow>,
    until: number,
    onBatch: (batch: BatchRecord) => void,
  ): Promise<boolean> {
    let batch: CheckedRow[] = [];
    let refused: Result[] = [];
    let last: CsvPosition | undefined;
    let applied = 0;
    for await (const row of rows) {
      last = row.end ?? last;
      if (row.error !== undefined) refused.push({ line: row.line, refused: row.error });
      else {
        const checked = checkRow(row.cells);
        if (typeof checked === 'string') refused.push({ line: row.line, refused: checked });
        else batch.push({ line: row.line, row: checked });
      }
      if (batch.length + refused.length >= BATCH && row.end !== undefined) {
        onBatch(await this.applyBatch(run, batch, refused, row.end));
        batch = [];
        refused = [];
        if (++applied % STATISTICS_EVERY === 0) await refreshStatistics(this.db, this.uow);
        if (performance.now() > until) return false;
      }
    }
    onBatch(await this.applyBatch(run, batch, refused, last));
    return true;
  }

  /**
   * Applies a batch in one transaction, with the run's counts, refusals and position (so that a
   * run stopped at any point goes on after its last committed batch, counting each row once).
   * When the transaction fails on one row (a refusal only the database finds, such as a
   * distinct_id another customer holds), again row by row, each in its own, so that the others go
   * in and the one is refused with the API's message; the counts then follow in a transaction of
   * their own (a run stopped just before them applies those rows again, as unchanged). A dry run's
   * transactions are rolled back once they know what the rows would do.
   */
  private async applyBatch(
    run: Run,
    batch: readonly CheckedRow[],
    refused: readonly Result[],
    end: CsvPosition | undefined,
  ): Promise<BatchRecord> {
    // A dry run finds duplicates in memory (it writes nothing); a real run in the database.
    const duplicates: Result[] = [...refused];
    let rows = batch;
    if (run.dryRun) {
      rows = batch.filter(({ line, row }) => {
        const email = normalizeEmail(row.email);
        const first = run.seen.get(email);
        if (first === undefined) {
          run.seen.set(email, line);
          return true;
        }
        duplicates.push({ line, refused: duplicateMessage(first) });
        return false;
      });
    }
    const record = async (w: Work, results: readonly Result[]): Promise<BatchRecord> => {
      const counted = countResults(results, end);
      if (run.importId !== null) {
        await insertRefusals(w.trx, run.importId, counted.refusals);
        await addToImport(w.trx, run.importId, counted, w.now);
      }
      return counted;
    };
    /** Applies `some`; with `others` (the batch's refusals), records the batch in the same transaction. */
    const attempt = async (some: readonly CheckedRow[], others: readonly Result[] | null) => {
      try {
        return await this.uow.run(async (w) => {
          const results = await this.applyRows(w, run, some);
          if (run.dryRun) throw new DryRun(results);
          if (others !== null) await record(w, [...others, ...results]);
          return results;
        });
      } catch (error) {
        if (error instanceof DryRun) return error.results;
        throw error;
      }
    };
    try {
      const results = await attempt(rows, duplicates);
      return countResults([...duplicates, ...results], end);
    } catch (error) {
      if (!isRowRefusal(error)) throw error;
    }
    const results: Result[] = [...duplicates];
    for (const checked of rows) {
      try {
        results.push(...(await attempt([checked], null)));
      } catch (error) {
        if (!isRowRefusal(error)) throw error;
        results.push({ line: checked.line, refused: databaseRefusal(error as DomainError, checked.row) });
      }
    }
    if (run.dryRun || run.importId === null) return countResults(results, end);
    return this.uow.run((w) => record(w, results));
  }

  /**
   * Rows, in the batch's transaction, set by set (a few statements for the batch, not a few per
   * row): each row's customer, their opening balance once per customer (with the points earned
   * beyond it), their identity; then every customer placed once, and each row's events: the
   * customer created or updated, the balance's points transaction, the tier move, each showing the
   * customer as the import left them. A row bringing a balance to a customer who has an imported
   * one (from another run and file) is refused whole, or with `setBalances` corrects it. A row the
   * database refuses (a distinct_id another customer holds) throws: the caller applies the rows
   * again one by one.
   */
  private async applyRows(w: Work, run: Run, rows: readonly CheckedRow[]): Promise<Result[]> {
    const { accountId, importId } = run;
    const refused = new Map<CheckedRow, string>();
    if (importId !== null) {
      const first = await claimEmails(
        w.trx,
        importId,
        rows.map(({ line, row }) => ({ email: normalizeEmail(row.email), line })),
      );
      for (const checked of rows) {
        const line = first.get(normalizeEmail(checked.row.email));
        // Its own line: the row applied again, its batch's counts having not committed.
        if (line !== undefined && line !== checked.line) refused.set(checked, duplicateMessage(line));
      }
    }
    const unique = rows.filter((checked) => !refused.has(checked));
    const held = await this.customers.importMany(
      w,
      accountId,
      unique.map(({ row }) => importedFields(row)),
    );
    const created = held.created;

    // Opening balances, claimed once per customer (their customers are locked: a racing import waits).
    const { credits, corrections, refusals } = await this.openingBalances(w, run, unique, held.customers);
    const applied: CheckedRow[] = [];
    const customers: LockedCustomer[] = [];
    for (const [i, checked] of unique.entries()) {
      const refusal = refusals.get(checked);
      if (refusal !== undefined) refused.set(checked, refusal);
      else {
        applied.push(checked);
        customers.push(held.customers[i]!);
      }
    }

    const outcomes = new Map<number, Outcome>();
    const announced = new Set<number>();
    for (const [i, customer] of customers.entries()) {
      if (created.has(customer.id)) {
        outcomes.set(customer.id, 'created');
        announced.add(customer.id);
        continue;
      }
      const changed = await this.customers.importFields(w, customer, importedFields(applied[i]!.row));
      if (changed) {
        customers[i] = changed;
        announced.add(customer.id);
      }
      outcomes.set(customer.id, changed ? 'updated' : 'unchanged');
    }

    // In the file's order: the ledger's entries and their events as the rows came.
    const postings = [...credits, ...corrections].sort((a, b) => a.balance.line - b.balance.line);
    const posted = postings.filter(({ entry }) => entry !== undefined);
    const entries = await this.ledger.creditMany(
      w,
      posted.map(({ customer, entry }) => ({ customer, entry: entry! })),
    );
    const beyond = postings
      .filter(({ beyond }) => beyond > 0)
      .map(({ customer, beyond }) => ({ customerId: customer.id, points: beyond }));
    await this.customers.addEarnedBeforeImport(w, beyond);
    await this.vipTiers.countEarnedElsewhere(w, beyond);
    await replaceOpeningBalances(
      w.trx,
      balanceSource(run),
      corrections.map(({ balance }) => balance),
      w.now,
    );
    const brought = postings.filter(({ entry, beyond }) => entry !== undefined || beyond > 0);
    for (const { customer } of brought) {
      if (outcomes.get(customer.id) === 'unchanged') outcomes.set(customer.id, 'updated');
    }

    for (const [i, { row }] of applied.entries()) {
      if (row.distinct_id === undefined) continue;
      const customer = customers[i]!;
      const linked = await this.identities.linkIfAbsent(w, accountId, {
        distinct_id: row.distinct_id,
        email: row.email,
      });
      if (linked && outcomes.get(customer.id) === 'unchanged') outcomes.set(customer.id, 'updated');
    }

    // Placed once, after everything the rows brought; then the events, showing each customer as left.
    const placed = [
      ...customers.filter((customer) => created.has(customer.id)),
      ...brought.map(({ customer }) => customer).filter((customer) => !created.has(customer.id)),
    ];
    const moves = await this.vipTiers.placeMany(w, placed);
    const after = await this.customers.heldIn(
      w,
      accountId,
      customers.map((customer) => customer.id),
    );
    const entryOf = new Map(entries.map((entry) => [entry.customer_id, entry]));
    for (const customer of customers) {
      const now = after.get(customer.id)!;
      if (announced.has(customer.id)) await this.customers.announce(w, now, created.has(customer.id));
      const entry = entryOf.get(customer.id);
      if (entry) await this.ledger.announce(w, entry, now);
      const move = moves.get(customer.id);
      if (move) this.vipTiers.announce(w, accountId, move);
    }
    const customerOf = new Map(applied.map((checked, i) => [checked, customers[i]!]));
    return rows.map((checked) => {
      const message = refused.get(checked);
      if (message !== undefined) return { line: checked.line, refused: message };
      return { line: checked.line, outcome: outcomes.get(customerOf.get(checked)!.id)! };
    });
  }

  /**
   * The opening balances `rows` bring their (locked) `customers`, claimed once per customer: a
   * customer without one gets the row's (`credits`); one who has it from this run or these same
   * bytes is left as they are (a run finished after a crash, or the file run again); one who has
   * it from another import has the row refused, naming it, or with `setBalances` corrected by the
   * difference (`corrections`), refused when that would take their balance below 0.
   */
  private async openingBalances(
    w: Work,
    run: Run,
    rows: readonly CheckedRow[],
    customers: readonly LockedCustomer[],
  ): Promise<{ credits: Posting[]; corrections: Posting[]; refusals: Map<CheckedRow, string> }> {
    const given = rows.flatMap((checked, i) => {
      const { points_balance, points_earned } = checked.row;
      if (points_balance === undefined && points_earned === undefined) return [];
      const pointsBalance = points_balance ?? 0;
      const balance = {
        customerId: customers[i]!.id,
        line: checked.line,
        pointsBalance,
        pointsEarned: points_earned ?? pointsBalance,
      };
      return [{ checked, customer: customers[i]!, balance }];
    });
    const { claimed, earlier } = await claimOpeningBalances(
      w.trx,
      run.accountId,
      balanceSource(run),
      given.map(({ balance }) => balance),
      w.now,
    );
    const credits: Posting[] = [];
    const corrections: Posting[] = [];
    const refusals = new Map<CheckedRow, string>();
    const note = (line: number) => `imported from ${run.fileName}, line ${line}`;
    for (const { checked, customer, balance } of given) {
      const { pointsBalance, pointsEarned, line } = balance;
      if (claimed.has(customer.id)) {
        credits.push({
          customer,
          balance,
          entry:
            pointsBalance > 0
              ? { pointsChange: pointsBalance, description: 'Imported balance', internalNote: note(line) }
              : undefined,
          beyond: pointsEarned - pointsBalance,
        });
        continue;
      }
      const before = earlier.get(customer.id);
      if (before === undefined || ownBalance(run, before)) continue;
      if (!run.setBalances) {
        refusals.set(checked, alreadyImported(customer.id, before));
        continue;
      }
      const change = pointsBalance - before.pointsBalance;
      if (customer.pointsBalance + change < 0) {
        refusals.set(checked, belowZero(customer, before, pointsBalance));
        continue;
      }
      const beyond = pointsEarned - before.pointsEarned - Math.max(change, 0);
      corrections.push({
        customer,
        // What stays recorded is what the customer's points earned now count: the ledger never
        // lowers points earned, so a file saying less leaves it as it was. Recording the file's
        // lower figure instead let the next run count the difference again, every time.
        balance: { ...balance, pointsEarned: before.pointsEarned + Math.max(change, 0) + Math.max(beyond, 0) },
        entry:
          change === 0
            ? undefined
            : {
                pointsChange: change,
                description: 'Imported balance corrected',
                internalNote: `${note(line)}: the imported balance was ${before.pointsBalance}`,
              },
        beyond,
      });
    }
    return { credits, corrections, refusals };
  }
}

/**
 * The contract's refusal (a 4xx DomainError): of one row when a row's work throws it, of the whole
 * file when reading it does; as opposed to a failure (the database gone), which is tried again.
 */
function isRowRefusal(error: unknown): boolean {
  return error instanceof DomainError && error.status < 500;
}

/** What an opening balance brings a customer: its ledger entry (none for 0) and the points earned beyond it. */
interface Posting {
  readonly customer: LockedCustomer;
  readonly balance: { customerId: number; line: number; pointsBalance: number; pointsEarned: number };
  readonly entry: LedgerEntry | undefined;
  readonly beyond: number;
}

/** The fields of a customer a row brings. */
function importedFields(row: ImportRow) {
  return {
    email: row.email,
    first_name: row.first_name ?? undefined,
    last_name: row.last_name ?? undefined,
    date_of_birth: row.date_of_birth,
    state: row.state,
  };
}

function balanceSource(run: Run): BalanceSource {
  return { importId: run.importId, fileName: run.fileName, fileSha256: run.fileSha256 };
}

/** Whether a customer's opening balance came from this run, or from the same bytes run before. */
function ownBalance(run: Run, balance: OpeningBalance): boolean {
  return (
    (run.importId !== null && balance.importId === run.importId) ||
    (run.fileSha256 !== null && balance.fileSha256 === run.fileSha256)
  );
}

/** Where an opening balance came from, as a refusal names it. */
function importOf(balance: OpeningBalance): string {
  const run = balance.importId === null ? 'an earlier import' : `import ${balance.importId}`;
  return `${run} of ${balance.fileName}${balance.line === null ? '' : `, line ${balance.line}`}`;
}

function alreadyImported(customerId: number, balance: OpeningBalance): string {
  return (
    `customer ${customerId} already has an imported balance (${balance.pointsBalance} points, ${importOf(balance)}): ` +
    'a balance is imported once per customer; to replace it with this file’s, import again with --set-balances ' +
    '(in the console: “Set balances to this file’s”)'
  );
}

function belowZero(customer: LockedCustomer, balance: OpeningBalance, pointsBalance: number): string {
  return (
    `points_balance ${pointsBalance} would take customer ${customer.id}'s balance below 0: their imported balance ` +
    `was ${balance.pointsBalance} (${importOf(balance)}) and they hold ${customer.pointsBalance} points`
  );
}

/**
 * A row the database refused, in the import's words: the ledger's bound on a balance is the
 * row's points_balance's (the file has no points_change); other refusals keep the API's words.
 */
function databaseRefusal(error: DomainError, row: ImportRow): string {
  const detail = error.details?.[0];
  if (detail?.field !== 'points_change' || row.points_balance === undefined) return error.message;
  return `points_balance ${quoted(String(row.points_balance))} ${detail.message}, the most a balance holds`;
}

function duplicateMessage(firstLine: number): string {
  return `email is the same as line ${firstLine}'s: a customer appears once per file`;
}

/** A batch's results counted, with where its last row ends. */
function countResults(results: readonly Result[], end: CsvPosition | undefined): BatchRecord {
  const counts = { rows: results.length, created: 0, updated: 0, unchanged: 0, refused: 0 };
  const refusals: { line: number; message: string }[] = [];
  for (const result of results) {
    if ('refused' in result) {
      counts.refused++;
      refusals.push({ line: result.line, message: result.refused });
    } else counts[result.outcome]++;
  }
  return { counts, refusals, end };
}

/**
 * Refuses a `--map 'Old=new'` whose old name is no column of the file (a typo would otherwise map
 * nothing, silently) or whose new name is no column the import reads (the column would be ignored).
 */
function checkRenames(names: readonly string[], rename: ReadonlyMap<string, string>): void {
  for (const [from, to] of rename) {
    if (!names.includes(from)) {
      throw mapRefusal(
        `names "${from}", which is not a column of the file (its columns: ${names.filter((n) => n !== '').join(', ')})`,
      );
    }
    if (to !== '' && !(IMPORT_COLUMNS as readonly string[]).includes(to)) {
      throw mapRefusal(
        `maps "${from}" to "${to}", which the import does not read (it reads: ${IMPORT_COLUMNS.join(', ')})`,
      );
    }
  }
}

/**
 * The columns an upload's file is read as with `mapping` (`mapping[i]`: the import column its
 * i-th column is read as, '' to ignore it), refused at the field of a column that cannot be read
 * so, or as a whole when none is read as email.
 */
function mappedColumns(upload: UploadedFile, mapping: readonly string[]): string[] {
  const columns = upload.names.map((_, i) => mapping[i] ?? '');
  columns.forEach((column, i) => {
    if (column === '') return;
    if (!(IMPORT_COLUMNS as readonly string[]).includes(column)) {
      throw invalidParameter(
        `mapping.${i}`,
        `${quoted(column)} is not a column the import reads: choose one of ${oneOf(IMPORT_COLUMNS)}, or ignore it`,
      );
    }
    const first = columns.indexOf(column);
    if (first !== i) {
      throw invalidParameter(
        `mapping.${i}`,
        `${column} is already read from "${upload.names[first]}": read this column as another, or ignore it`,
      );
    }
  });
  if (!columns.includes('email')) {
    const message = 'no column is read as email: choose email for the column that holds the customers’ email addresses';
    throw new DomainError('invalid_parameter', message, [{ field: 'mapping', message }]);
  }
  return columns;
}

/** Refuses a file whose header (after --map) has no email column. */
function checkHeader(columns: readonly string[]): void {
  if (columns.length === 0) throw invalidParameter('file', 'is empty: the first line must name the columns');
  if (!columns.includes('email')) {
    throw invalidParameter(
      'file',
      `has no "email" column (its columns: ${columns.filter((c) => c !== '').join(', ')}); rename one with --map 'Name=email'`,
    );
  }
}

/**
 * A row's cells checked as the API checks a customer: the row, or the message that refuses it, in
 * a merchant's words (src/imports/refusals.ts): the column, its cell, what the column accepts.
 */
function checkRow(cells: ReadonlyMap<string, string>): ImportRow | string {
  const value: Record<string, unknown> = {};
  const given = new Map<string, string>();
  for (const column of IMPORT_COLUMNS) {
    const cell = cells.get(column)?.trim();
    if (cell === undefined || cell === '') continue;
    if ((TEXT_COLUMNS as readonly string[]).includes(column) && FORMULA.test(cell)) {
      return formulaRefusal(column, cell);
    }
    given.set(column, cell);
    value[column] =
      (NUMBER_COLUMNS as readonly string[]).includes(column) && /^[+-]?\d{1,16}$/.test(cell) ? Number(cell) : cell;
  }
  if (value.email === undefined) return NO_EMAIL;
  let row: ImportRow;
  try {
    row = validate(ImportRow, value, 'row');
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const first = error.details?.[0];
    if (!first) return error.message;
    const column = first.field.replace(/^row\./, '');
    return cellRefusal(column, given.get(column) ?? '', first.message);
  }
  if (row.points_earned !== undefined && row.points_earned < (row.points_balance ?? 0)) {
    return (
      `points_earned must be at least points_balance (${row.points_balance}), got ${quoted(given.get('points_earned')!)}: ` +
      'points earned include the points held'
    );
  }
  return row;
}
