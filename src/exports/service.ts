import { stringify } from 'csv-stringify/sync';
import type { AccountsService } from '../accounts/service.js';
import { CUSTOMER_STATES } from '../customers/schemas.js';
import type { CustomersService } from '../customers/service.js';
import { invalidParameter } from '../errors.js';
import { IMPORT_COLUMNS } from '../imports/schemas.js';
import type { Db } from '../storage/db.js';

// Exports (docs/imports.md, "Exports"): an account's records as CSV or JSON Lines, read page by
// page from one snapshot of the database (what one moment held, however long the export runs),
// written as they are read: memory stays flat however many there are.

export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Records read per statement. */
const PAGE = 1000;
/** A cell a spreadsheet would run as a formula: written with a leading apostrophe, which it shows as text. */
const FORMULA = /^[=+\-@\t\r]/;

/** Where an export writes: resolves once the text is taken (a stream's backpressure). */
export type ExportSink = (text: string) => Promise<void>;

/** The API list filters of an export of customers. */
export interface CustomerExportFilters {
  email?: string;
  state?: 'candidate' | 'member' | 'disabled';
  updated_at_min?: string;
}

export class ExportsService {
  constructor(
    private readonly db: Db,
    private readonly accounts: AccountsService,
    private readonly customerRecords: CustomersService,
  ) {}

  /**
   * The account's customers matching the API's list filters, newest first, with the import's
   * columns (`email, first_name, last_name, date_of_birth, state, points_balance, points_earned`,
   * then `id, vip_tier_id, referral_url, created_at`); answers how many.
   */
  async customers(
    accountId: number,
    format: string,
    filters: CustomerExportFilters,
    sink: ExportSink,
  ): Promise<number> {
    const as = checkFormat(format);
    if (filters.state !== undefined && !(CUSTOMER_STATES as readonly string[]).includes(filters.state)) {
      throw invalidParameter('state', `must be one of ${CUSTOMER_STATES.join(', ')}`);
    }
    await this.accounts.require(accountId);
    return this.db.snapshot(async (snapshot) => {
      let count = 0;
      let before: number | null = null;
      for (;;) {
        const page = await this.customerRecords.exportPage(snapshot, accountId, filters, before, PAGE);
        if (page.rows.length > 0 || count === 0) await sink(render(as, page.rows, count === 0, CUSTOMER_COLUMNS));
        count += page.rows.length;
        if (page.next === undefined) return count;
        before = page.next;
      }
    });
  }
}

/** The import's columns first (its distinct_id aside: identities are not exported), so that an export imports as it is. */
const CUSTOMER_COLUMNS = [
  ...IMPORT_COLUMNS.filter((column) => column !== 'distinct_id'),
  'id',
  'vip_tier_id',
  'referral_url',
  'created_at',
];

function checkFormat(format: string): ExportFormat {
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw invalidParameter('format', `must be one of ${EXPORT_FORMATS.join(', ')}`);
  }
  return format as ExportFormat;
}

/** Records as CSV lines (the header first when `first`, formulas neutralised) or JSON Lines. */
function render(format: ExportFormat, records: readonly object[], first: boolean, columns: string[]): string {
  if (format === 'jsonl') return records.map((record) => `${JSON.stringify(record)}\n`).join('');
  return stringify(records as Record<string, unknown>[], {
    header: first,
    columns,
    cast: { string: (value) => (FORMULA.test(value) ? `'${value}` : value) },
  });
}
