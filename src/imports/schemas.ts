import { type Static, Type } from 'typebox';
import { LIMITS as IDENTITY_LIMITS } from '../customer-identities/schemas.js';
import { CustomerStateSchema, EmailAddress, Name, NO_NUL } from '../customers/schemas.js';

/** The most points a JSON number keeps exactly (2^53 - 1), the ledger's bound. */
const MAX_POINTS = Number.MAX_SAFE_INTEGER;

/** The columns an import reads (`--map` renames others to these); the rest are ignored. */
export const IMPORT_COLUMNS = [
  'email',
  'first_name',
  'last_name',
  'date_of_birth',
  'state',
  'points_balance',
  'points_earned',
  'distinct_id',
] as const;

/** One row of a customers file, as checked (empty cells are absent). */
export const ImportRow = Type.Object(
  {
    email: EmailAddress,
    first_name: Type.Optional(Name('Given name')),
    last_name: Type.Optional(Name('Family name')),
    date_of_birth: Type.Optional(Type.String({ format: 'date', description: 'YYYY-MM-DD' })),
    state: Type.Optional(CustomerStateSchema),
    points_balance: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_POINTS })),
    points_earned: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_POINTS })),
    distinct_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: IDENTITY_LIMITS.distinctIdLength, pattern: NO_NUL }),
    ),
  },
  { additionalProperties: false },
);
export type ImportRow = Static<typeof ImportRow>;

/** What `loyalty import customers --json` prints when it ends. */
export interface ImportSummary {
  rows: number;
  created: number;
  updated: number;
  unchanged: number;
  refused: number;
  refusals: { line: number; message: string }[];
}

/** A run's progress, as the CLI's bar and the console show it. */
export interface ImportProgress {
  readonly id: number | null;
  readonly fileName: string;
  readonly status: 'running' | 'finished' | 'failed';
  readonly bytesRead: number;
  readonly bytesTotal: number;
  readonly rows: number;
  readonly created: number;
  readonly updated: number;
  readonly unchanged: number;
  readonly refused: number;
  readonly error: string | null;
  readonly startedAt: number;
  readonly finishedAt: number | null;
  /** Whether it sets balances to the file's instead of refusing those of customers who have one. */
  readonly setBalances: boolean;
}
