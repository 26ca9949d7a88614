import { LIMITS as IDENTITY_LIMITS } from '../customer-identities/schemas.js';
import { CUSTOMER_LIMITS, CUSTOMER_STATES } from '../customers/schemas.js';
import { DomainError } from '../errors.js';

// A refused row in a merchant's words (issue 49): the column, what was wrong with its cell and what
// the column accepts, never JSON Schema's ("must match format …") nor its paths. The line is the
// refusal's own field: the CLI prints `line 14: …`, the console's table and CSV have a Line column.

/** The most characters of a cell a message quotes: enough to find it in the file. */
const QUOTED_LENGTH = 40;

/** `value` as a message quotes it: at most QUOTED_LENGTH characters, then `…`. */
export function shortened(value: string): string {
  const characters = Array.from(value);
  return characters.length > QUOTED_LENGTH ? `${characters.slice(0, QUOTED_LENGTH).join('')}…` : value;
}

/** `value` in quotes as a message shows it (shortened). */
export function quoted(value: string): string {
  return `"${shortened(value)}"`;
}

/** A `--map` option refused: `invalid_parameter` at `map`, its message naming the option as typed. */
export function mapRefusal(message: string): DomainError {
  return new DomainError('invalid_parameter', `--map ${message}`, [{ field: 'map', message }]);
}

/** `a, b or c`. */
export function oneOf(values: readonly string[]): string {
  return values.length < 2 ? (values[0] ?? '') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

const POINTS = 'a whole number of points, 0 or more, such as 120';

/** What each column of the import accepts, in words. */
export const COLUMN_ACCEPTS: Readonly<Record<string, string>> = {
  email: `an email address, such as name@example.com (at most ${CUSTOMER_LIMITS.emailLength} characters)`,
  first_name: `text of at most ${CUSTOMER_LIMITS.nameLength} characters`,
  last_name: `text of at most ${CUSTOMER_LIMITS.nameLength} characters`,
  date_of_birth: 'a date written YYYY-MM-DD, such as 1990-04-01',
  state: oneOf(CUSTOMER_STATES),
  points_balance: POINTS,
  points_earned: POINTS,
  distinct_id: `text of at most ${IDENTITY_LIMITS.distinctIdLength} characters`,
};

/**
 * Why the cell of `column` was refused, given the schema's message about it: a NUL character or
 * a number past the ledger's bound said as such, anything else as what the column accepts.
 */
export function cellRefusal(column: string, cell: string, schemaMessage: string): string {
  if (/^must match pattern /.test(schemaMessage) && cell.includes('\u0000')) {
    return `${column} holds a NUL character (a byte of 0), which no text may hold: remove it`;
  }
  const most = /^must be <= (\d+)$/.exec(schemaMessage);
  if (most) return `${column} must be at most ${Number(most[1]).toLocaleString('en-US')} points, got ${quoted(cell)}`;
  const long = /^must NOT have more than (\d+) characters$/.exec(schemaMessage);
  if (long) {
    return `${column} must be at most ${long[1]} characters long, got ${Array.from(cell).length.toLocaleString('en-US')}`;
  }
  return `${column} must be ${COLUMN_ACCEPTS[column] ?? 'another value'}, got ${quoted(cell)}`;
}

/** A name or distinct_id a spreadsheet would run as a formula. */
export function formulaRefusal(column: string, cell: string): string {
  return (
    `${column} must not start with =, +, - or @ (a spreadsheet would run it as a formula), got ${quoted(cell)}: ` +
    'remove that first character'
  );
}

export const NO_EMAIL = 'email is empty: every row needs the customer’s email address';

/**
 * A row csv-parse refused (its CsvError's `code`, and the index of the cell it was reading), in
 * words: a quote in the middle of a cell written without quotes, most often.
 */
export function csvRefusal(code: string | undefined, column: string, message: string): string {
  if (code === 'INVALID_OPENING_QUOTE') {
    return (
      `${column} has a quote (") inside a cell that does not start with one: a cell holding quotes ` +
      'must be in quotes, each quote inside it doubled, such as "Bob ""the builder"""'
    );
  }
  if (code === 'CSV_QUOTE_NOT_CLOSED') {
    return `${column} opens a quote (") that the file never closes: end the cell with a quote`;
  }
  return `the row cannot be read as CSV (${message.replace(/ (?:at|on) line \d+/g, '')})`;
}

/** A row whose quoted cell has a quote that does not end it (found before csv-parse reads it). */
export function quoteInsideRefusal(column: string): string {
  return (
    `${column} has a quote (") inside its quoted text that does not end it: write each quote inside a ` +
    'quoted cell twice, such as "Bob ""the builder"""'
  );
}

/** A column's name in a refusal: the import's, else the file's position of it. */
export function columnName(columns: readonly string[] | undefined, index: number): string {
  const name = columns?.[index];
  return name === undefined || name === '' ? `column ${index + 1}` : name;
}

/** Why a file cannot be read or written, in words (a Node error's code), for `file cannot be read: …`. */
export function fileProblem(error: unknown, path: string): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return `there is no ${quoted(path)} (check the path, and the folder it is in)`;
    case 'EACCES':
    case 'EPERM':
      return `${quoted(path)} may not be opened by this user (permission denied)`;
    case 'EISDIR':
      return `${quoted(path)} is a folder: name a file in it`;
    case 'ENOTDIR':
      return `a part of ${quoted(path)} before its last is a file, not a folder`;
    default:
      return (error as Error).message;
  }
}
