import { stringify } from 'csv-stringify/sync';
import type { Kysely } from 'kysely';
import { type TSchema, Type } from 'typebox';
import type { AccountsService } from '../accounts/service.js';
import type { ActivitiesQuery, ActivitiesService } from '../activities/service.js';
import type { Clock } from '../clock.js';
import { Id } from '../common-schemas.js';
import { CustomersQuery } from '../customers/schemas.js';
import type { CustomersService } from '../customers/service.js';
import { DomainError, invalidParameter } from '../errors.js';
import { oneOf, quoted } from '../imports/refusals.js';
import { IMPORT_COLUMNS } from '../imports/schemas.js';
import { UpdatedAtMin } from '../pagination/schemas.js';
import { PointsTransaction, PointsTransactionsQuery } from '../points-transactions/schemas.js';
import type { PointsTransactionsService } from '../points-transactions/service.js';
import { RewardFulfillment, RewardFulfillmentsQuery } from '../reward-fulfillments/schemas.js';
import type { RewardFulfillmentsService } from '../reward-fulfillments/service.js';
import type { Db } from '../storage/db.js';
import type { Database } from '../storage/schema.js';
import { validate } from '../validate.js';

// Exports (docs/imports.md, "Exports"): an account's records as CSV or JSON Lines, read page by
// page from one snapshot of the database (what one moment held, however long the export runs),
// written as they are read: memory stays flat however many there are.

export const EXPORT_KINDS = ['customers', 'points-transactions', 'reward-fulfillments', 'activities'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The filters each kind takes: the API list's query parameters (activities, which have no list, take the ledger's). */
export const EXPORT_FILTERS: Record<ExportKind, readonly string[]> = {
  customers: ['email', 'state', 'updated_at_min'],
  'points-transactions': ['customer_id', 'updated_at_min'],
  'reward-fulfillments': ['customer_id', 'fulfillment_status', 'usage_status', 'code', 'updated_at_min'],
  activities: ['customer_id', 'updated_at_min'],
};

/** The query each kind's filter values are checked against: the API list's own, so both refuse alike. */
const QUERIES: Record<ExportKind, { properties: Record<string, TSchema> }> = {
  customers: CustomersQuery,
  'points-transactions': PointsTransactionsQuery,
  'reward-fulfillments': RewardFulfillmentsQuery,
  activities: Type.Object({
    customer_id: Type.Optional(Id('Only the activities of this customer')),
    updated_at_min: UpdatedAtMin('activities'),
  }),
};

/** Records read per statement. */
const PAGE = 1000;
/** A cell a spreadsheet would run as a formula: written with a leading apostrophe, which it shows as text. */
const FORMULA = /^[=+\-@\t\r]/;
/** An integer as the API reads one from a query string: decimal digits, no leading zeros (http/strict-input.ts). */
const DECIMAL_INTEGER = /^(?:0|-?[1-9][0-9]*)$/;

/** Where an export writes: resolves once the text is taken (a stream's backpressure). */
export type ExportSink = (text: string) => Promise<void>;

/** Filter values as checked: integers read, the rest as given. */
type Filters = Record<string, string | number>;

/** One kind's records: its columns, and a page of them as `snapshot` holds them. */
interface ExportSource {
  columns: readonly string[];
  page(
    snapshot: Kysely<Database>,
    before: number | null,
    limit: number,
  ): Promise<{ rows: readonly object[]; next: number | undefined }>;
}

export class ExportsService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
    private readonly customers: CustomersService,
    private readonly pointsTransactions: PointsTransactionsService,
    private readonly rewardFulfillments: RewardFulfillmentsService,
    private readonly activities: ActivitiesService,
    /** Records read per statement (a test makes it small to write between pages). */
    private readonly pageSize = PAGE,
  ) {}

  /** The name a download of `kind` in `format` is saved as: the kind and today's date (by the service's clock). */
  fileName(kind: ExportKind, format: ExportFormat): string {
    return `${kind}-${new Date(this.clock.now()).toISOString().slice(0, 10)}.${format}`;
  }

  /**
   * The account's records of `kind` matching the API's list filters, newest first, as CSV (a
   * header, then a line per record) or JSON Lines, handed to `sink` page by page; answers how
   * many. An unknown kind, format or filter, or a value the API's list would refuse, is
   * `invalid_parameter` before anything is written.
   */
  async export(
    kind: string,
    accountId: number,
    format: string,
    filters: Readonly<Record<string, string | undefined>>,
    sink: ExportSink,
  ): Promise<number> {
    const known = checkKind(kind);
    const as = checkFormat(format);
    const source = this.source(known, accountId, checkFilters(known, filters));
    await this.accounts.require(accountId);
    return this.db.snapshot(async (snapshot) => {
      let count = 0;
      let before: number | null = null;
      for (;;) {
        const page = await source.page(snapshot, before, this.pageSize);
        if (page.rows.length > 0 || count === 0) await sink(render(as, page.rows, count === 0, source.columns));
        count += page.rows.length;
        if (page.next === undefined) return count;
        before = page.next;
      }
    });
  }

  /** How the account's records of `kind` are read, with `filters` (checked against its query: the casts hold). */
  private source(kind: ExportKind, accountId: number, filters: Filters): ExportSource {
    switch (kind) {
      case 'customers':
        return {
          columns: CUSTOMER_COLUMNS,
          page: (snapshot, before, limit) =>
            this.customers.exportPage(snapshot, accountId, filters as CustomersQuery, before, limit),
        };
      case 'points-transactions':
        return {
          columns: POINTS_TRANSACTION_COLUMNS,
          page: (snapshot, before, limit) =>
            this.pointsTransactions.exportPage(snapshot, accountId, filters as PointsTransactionsQuery, before, limit),
        };
      case 'reward-fulfillments': {
        // One instant for the whole export, as the snapshot is one: no code expires between pages.
        const now = this.clock.now();
        return {
          columns: REWARD_FULFILLMENT_COLUMNS,
          page: (snapshot, before, limit) =>
            this.rewardFulfillments.exportPage(
              snapshot,
              accountId,
              filters as RewardFulfillmentsQuery,
              before,
              limit,
              now,
            ),
        };
      }
      case 'activities':
        return {
          columns: ACTIVITY_COLUMNS,
          page: (snapshot, before, limit) =>
            this.activities.exportPage(snapshot, accountId, filters as ActivitiesQuery, before, limit),
        };
    }
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
/** The API's fields, in its order. */
const POINTS_TRANSACTION_COLUMNS = Object.keys(PointsTransaction.properties);
const REWARD_FULFILLMENT_COLUMNS = Object.keys(RewardFulfillment.properties);
/** The API's Activity but for its credits (the ledger's export has them, each with its activity_id). */
const ACTIVITY_COLUMNS = [
  'id',
  'customer_id',
  'token',
  'distinct_id',
  'properties',
  'created_on_origin_at',
  'created_at',
  'updated_at',
];

/** `kind` as an export's, or `invalid_parameter` saying which there are. */
export function checkKind(kind: string): ExportKind {
  if (!(EXPORT_KINDS as readonly string[]).includes(kind)) {
    throw invalidParameter('kind', `must be ${oneOf(EXPORT_KINDS)}, got ${quoted(kind)}`);
  }
  return kind as ExportKind;
}

function checkFormat(format: string): ExportFormat {
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw invalidParameter('format', `must be ${oneOf(EXPORT_FORMATS)}, got ${quoted(format)}`);
  }
  return format as ExportFormat;
}

/** What each filter that is not one of a few values accepts, in words (its query's schema checks it). */
const FILTER_ACCEPTS: Readonly<Record<string, string>> = {
  customer_id: 'a customer id: a whole number from 1, written without leading zeros, such as 42',
  updated_at_min: 'a time with its time zone (ISO 8601), such as 2026-01-31T00:00:00Z',
  email: 'an email address',
  code: 'a reward code',
};

/**
 * Why a filter's value was refused, in words: what it accepts (a few values are named), or its
 * bound, with what was given.
 */
function filterRefusal(name: string, schema: TSchema, value: string, schemaMessage: string): string {
  const long = /^must NOT have more than (\d+) characters$/.exec(schemaMessage);
  if (long) return `must be at most ${long[1]} characters long, got ${Array.from(value).length}`;
  if (/^must NOT have fewer than 1 characters$/.test(schemaMessage)) return 'must not be empty';
  const values = (schema as { enum?: unknown }).enum;
  const accepts = Array.isArray(values) ? oneOf(values.map(String)) : (FILTER_ACCEPTS[name] ?? 'another value');
  return `must be ${accepts}, got ${quoted(value)}`;
}

/**
 * The filters given (undefined ones left out), each a filter of `kind` and checked as the API's
 * list checks its query string: an integer in decimal digits, then the list's own schema.
 */
function checkFilters(kind: ExportKind, filters: Readonly<Record<string, string | undefined>>): Filters {
  const taken = EXPORT_FILTERS[kind];
  const checked: Filters = {};
  for (const [name, value] of Object.entries(filters)) {
    if (value === undefined) continue;
    if (!taken.includes(name)) {
      throw invalidParameter(name, `is not a filter of the ${kind} export: it takes ${taken.join(', ')}`);
    }
    const schema = QUERIES[kind].properties[name] as TSchema & { type?: unknown };
    const read = schema.type === 'integer' && DECIMAL_INTEGER.test(value) ? Number(value) : value;
    try {
      checked[name] = validate(schema, read, name) as string | number;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      throw invalidParameter(name, filterRefusal(name, schema, value, error.details?.[0]?.message ?? ''));
    }
  }
  return checked;
}

/** Records as CSV lines (the header first when `first`) or JSON Lines. */
function render(format: ExportFormat, records: readonly object[], first: boolean, columns: readonly string[]): string {
  if (format === 'jsonl') return records.map((record) => `${JSON.stringify(record)}\n`).join('');
  return csvLines(records, columns, first);
}

/** Records as CSV lines, the header first when `header`: objects as JSON text, formulas neutralised. */
export function csvLines(records: readonly object[], columns: readonly string[], header: boolean): string {
  return stringify(records as Record<string, unknown>[], {
    header,
    columns: [...columns],
    cast: {
      string: (value) => (FORMULA.test(value) ? `'${value}` : value),
      object: (value) => JSON.stringify(value),
    },
  });
}
