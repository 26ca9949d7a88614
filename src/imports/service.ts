import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import type { CustomerIdentitiesService } from '../customer-identities/service.js';
import type { CustomersService } from '../customers/service.js';
import { normalizeEmail } from '../email.js';
import { DomainError, invalidParameter } from '../errors.js';
import type { PointsTransactionsService } from '../points-transactions/service.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import type { VipTiersService } from '../vip-tiers/service.js';
import { CsvFileError, type CsvHeader, readCsv } from './csv.js';
import {
  addToImport,
  claimEmail,
  claimImportedBalance,
  findImports,
  findRefusals,
  finishImport,
  insertImport,
  insertRefusals,
} from './repository.js';
import { IMPORT_COLUMNS, type ImportProgress, ImportRow, type ImportSummary } from './schemas.js';

/** Rows applied per transaction: short ones, that never hold the API back for long. */
const BATCH = 200;
/** Cells that a spreadsheet would run as a formula. */
const FORMULA = /^[=+\-@\t\r]/;
const TEXT_COLUMNS = ['first_name', 'last_name', 'distinct_id'] as const;
const NUMBER_COLUMNS = ['points_balance', 'points_earned'] as const;

/** What an import is asked to do besides its file. */
export interface ImportOptions {
  /** Column names of the file renamed to the import's (`--map 'Old=new'`). */
  readonly rename?: ReadonlyMap<string, string>;
  /** Checks every row and writes nothing. */
  readonly dryRun?: boolean;
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

/** Stops a dry run's transaction once it knows what its rows would do. */
class DryRun extends Error {
  constructor(readonly results: Result[]) {
    super('dry run');
  }
}

/**
 * Imports of customers with their balances from CSV (docs/imports.md): rows matched by email,
 * streamed in batches of short transactions; a refused row never stops the others; running a
 * file again changes nothing, and finishes a run that stopped half way.
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
  ) {}

  /** The account's latest runs, newest first. */
  async recent(accountId: number, limit = 10): Promise<ImportProgress[]> {
    return findImports(this.db, accountId, limit);
  }

  /**
   * Imports the customers of the CSV file at `path` into the account. Its name is the file's for
   * the balances it brings: each customer's is written once per file name.
   */
  async importCustomers(accountId: number, path: string, options: ImportOptions = {}): Promise<ImportSummary> {
    await this.accounts.require(accountId);
    const fileName = basename(path);
    let bytesTotal: number;
    try {
      bytesTotal = (await stat(path)).size;
    } catch (error) {
      throw invalidParameter('file', `cannot be read: ${(error as Error).message}`);
    }
    const startedAt = this.clock.now();
    const importId = options.dryRun
      ? null
      : await insertImport(this.db, { accountId, fileName, bytesTotal, now: startedAt });
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
    };
    const refusals: { line: number; message: string }[] = [];
    const seen = new Map<string, number>();
    const run = { accountId, fileName, importId, seen };

    const flush = async (batch: CheckedRow[], refused: Result[]) => {
      const results = [...refused, ...(await this.applyBatch(run, batch, options.dryRun === true))];
      const counts = {
        bytesRead: progress.bytesRead,
        rows: results.length,
        created: 0,
        updated: 0,
        unchanged: 0,
        refused: 0,
      };
      const batchRefusals: { line: number; message: string }[] = [];
      for (const result of results) {
        if ('refused' in result) {
          counts.refused++;
          batchRefusals.push({ line: result.line, message: result.refused });
        } else counts[result.outcome]++;
      }
      if (importId !== null) {
        await this.uow.run(async (w) => {
          await insertRefusals(w.trx, importId, batchRefusals);
          await addToImport(w.trx, importId, counts, w.now);
        });
      } else refusals.push(...batchRefusals);
      progress.rows += counts.rows;
      progress.created += counts.created;
      progress.updated += counts.updated;
      progress.unchanged += counts.unchanged;
      progress.refused += counts.refused;
      options.onProgress?.({ ...progress });
    };

    try {
      let batch: CheckedRow[] = [];
      let refused: Result[] = [];
      const rows = readCsv(createReadStream(path), {
        rename: options.rename ?? new Map(),
        onHeader: (header) => checkHeader(header),
        onBytes: (bytes) => {
          progress.bytesRead = bytes;
        },
      });
      for await (const row of rows) {
        if (row.error !== undefined) refused.push({ line: row.line, refused: row.error });
        else {
          const checked = checkRow(row.cells);
          if (typeof checked === 'string') refused.push({ line: row.line, refused: checked });
          else batch.push({ line: row.line, row: checked });
        }
        if (batch.length + refused.length >= BATCH) {
          await flush(batch, refused);
          batch = [];
          refused = [];
        }
      }
      progress.bytesRead = bytesTotal;
      await flush(batch, refused);
    } catch (error) {
      if (importId !== null) {
        const message = error instanceof Error ? error.message : String(error);
        await finishImport(this.db, importId, {
          status: 'failed',
          error: message,
          bytesRead: progress.bytesRead,
          now: this.clock.now(),
        });
      }
      if (error instanceof DomainError) throw error;
      if (error instanceof CsvFileError || (error instanceof Error && error.name === 'CsvError')) {
        throw invalidParameter('file', error.message);
      }
      throw error;
    }
    progress.status = 'finished';
    progress.finishedAt = this.clock.now();
    if (importId !== null) {
      await finishImport(this.db, importId, {
        status: 'finished',
        error: null,
        bytesRead: bytesTotal,
        now: progress.finishedAt,
      });
    }
    const { rows, created, updated, unchanged, refused } = progress;
    const listed = importId === null ? refusals.sort((a, b) => a.line - b.line) : await findRefusals(this.db, importId);
    return { rows, created, updated, unchanged, refused, refusals: listed };
  }

  /**
   * Applies a batch in one transaction; when the transaction fails on one row (a refusal only the
   * database finds, such as a distinct_id another customer holds), again row by row, each in its
   * own, so that the others go in and the one is refused with the API's message. A dry run's
   * transactions are rolled back once they know what the rows would do.
   */
  private async applyBatch(
    run: { accountId: number; fileName: string; importId: number | null; seen: Map<string, number> },
    batch: readonly CheckedRow[],
    dryRun: boolean,
  ): Promise<Result[]> {
    if (batch.length === 0) return [];
    // A dry run finds duplicates in memory (it writes nothing); a real run in the database.
    const duplicates: Result[] = [];
    let rows = batch;
    if (dryRun) {
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
    const attempt = async (some: readonly CheckedRow[]) => {
      try {
        return await this.uow.run(async (w) => {
          const results: Result[] = [];
          for (const checked of some) results.push(await this.applyRow(w, run, checked));
          if (dryRun) throw new DryRun(results);
          return results;
        });
      } catch (error) {
        if (error instanceof DryRun) return error.results;
        throw error;
      }
    };
    try {
      return [...duplicates, ...(await attempt(rows))];
    } catch (error) {
      if (!isRowRefusal(error)) throw error;
    }
    const results: Result[] = [...duplicates];
    for (const checked of rows) {
      try {
        results.push(...(await attempt([checked])));
      } catch (error) {
        if (!isRowRefusal(error)) throw error;
        results.push({ line: checked.line, refused: (error as DomainError).message });
      }
    }
    return results;
  }

  /** One row, in the batch's transaction: its customer, their balance from this file once, their identity. */
  private async applyRow(
    w: Work,
    run: { accountId: number; fileName: string; importId: number | null },
    { line, row }: CheckedRow,
  ): Promise<Result> {
    const { accountId, fileName, importId } = run;
    if (importId !== null) {
      const first = await claimEmail(w.trx, importId, normalizeEmail(row.email), line);
      if (first !== undefined) return { line, refused: duplicateMessage(first) };
    }
    const { email, first_name, last_name, date_of_birth, state } = row;
    const imported = await this.customers.importIn(w, accountId, {
      email,
      first_name: first_name ?? undefined,
      last_name: last_name ?? undefined,
      date_of_birth,
      state,
    });
    let outcome: Outcome = imported.outcome;
    const balance = row.points_balance ?? 0;
    const earned = row.points_earned ?? balance;
    const customerId = imported.customer.id;
    if (
      (balance > 0 || earned > 0) &&
      (await claimImportedBalance(
        w.trx,
        { accountId, fileName, customerId, pointsBalance: balance, pointsEarned: earned },
        w.now,
      ))
    ) {
      let customer = await this.customers.lock(w, accountId, customerId);
      if (!customer) throw new Error(`customer ${customerId} vanished during its import`);
      if (balance > 0) {
        customer = (
          await this.ledger.post(w, customer, {
            pointsChange: balance,
            description: 'Imported balance',
            internalNote: `imported from ${fileName}`,
          })
        ).customer;
      }
      if (earned > balance) {
        await this.customers.addEarnedBeforeImport(w, customer, earned - balance);
        const placed = await this.vipTiers.countEarnedElsewhere(w, customer, earned - balance);
        if (placed.move) this.vipTiers.announce(w, accountId, placed.move);
      }
      if (outcome === 'unchanged') outcome = 'updated';
    }
    if (row.distinct_id !== undefined) {
      const linked = await this.identities.linkIfAbsent(w, accountId, { distinct_id: row.distinct_id, email });
      if (linked && outcome === 'unchanged') outcome = 'updated';
    }
    return { line, outcome };
  }
}

/** A refusal of one row (the API's error for it), as opposed to a failure of the import. */
function isRowRefusal(error: unknown): boolean {
  return error instanceof DomainError && error.status < 500;
}

function duplicateMessage(firstLine: number): string {
  return `email is the same as line ${firstLine}'s: a customer appears once per file`;
}

/** Refuses a file whose header has no email column (after --map). */
function checkHeader(header: CsvHeader): void {
  if (header.columns.length === 0) throw invalidParameter('file', 'is empty: the first line must name the columns');
  if (!header.columns.includes('email')) {
    throw invalidParameter(
      'file',
      `has no "email" column (its columns: ${header.columns.join(', ')}); rename one with --map 'Name=email'`,
    );
  }
}

/** A row's cells checked as the API checks a customer: the row, or the message that refuses it. */
function checkRow(cells: ReadonlyMap<string, string>): ImportRow | string {
  const value: Record<string, unknown> = {};
  for (const column of IMPORT_COLUMNS) {
    const cell = cells.get(column)?.trim();
    if (cell === undefined || cell === '') continue;
    if ((TEXT_COLUMNS as readonly string[]).includes(column) && FORMULA.test(cell)) {
      return `${column} starts with "${cell[0]}": a spreadsheet formula is not imported`;
    }
    value[column] =
      (NUMBER_COLUMNS as readonly string[]).includes(column) && /^[+-]?\d{1,16}$/.test(cell) ? Number(cell) : cell;
  }
  if (value.email === undefined) return 'email is required';
  let row: ImportRow;
  try {
    row = validate(ImportRow, value, 'row');
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const first = error.details?.[0];
    return first ? `${first.field.replace(/^row\./, '')} ${first.message}` : error.message;
  }
  if (row.points_earned !== undefined && row.points_earned < (row.points_balance ?? 0)) {
    return `points_earned must be at least points_balance (${row.points_balance}): points earned include those held`;
  }
  return row;
}
