import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { columnName, csvRefusal, quoteInsideRefusal } from './refusals.js';

// Reading a CSV file row by row with csv-parse (quotes, embedded newlines, a byte-order mark,
// CRLF), streamed: memory stays flat whatever the file's size. The separator is `,` or `;`, as the
// header line uses. Every cell is checked to be UTF-8; each row knows the physical line it starts on.

/** Where a row ends in the file: the byte after it and the line it ends on (where reading can go on from). */
export interface CsvPosition {
  readonly bytes: number;
  readonly lines: number;
}

/**
 * A row of the file: its line (the header is line 1) and its cells by (mapped) column name, or
 * why it cannot be read; with where it ends, except for a row the parser skipped.
 */
export type CsvRow =
  | {
      readonly line: number;
      readonly cells: ReadonlyMap<string, string>;
      /** The row's cells in the file's order, whatever their columns are read as (the mapping step's samples). */
      readonly texts: readonly string[];
      readonly error?: undefined;
      readonly end: CsvPosition;
    }
  | { readonly line: number; readonly error: string; readonly end?: CsvPosition };

/** A file that cannot be imported at all (its header). */
export class CsvFileError extends Error {}

/** The file's header, once read: its columns as the file names them and after `--map`, its separator. */
export interface CsvHeader {
  readonly names: readonly string[];
  readonly columns: readonly string[];
  readonly delimiter: ',' | ';';
}

/** Reading on from a row's end: the input starts there; the header was read before. */
export interface CsvResume extends CsvPosition {
  readonly delimiter: ',' | ';';
  readonly columns: readonly string[];
}

/** How a file in another encoding is made one an import reads. */
const SAVE_AS_UTF8 = 'save the file as UTF-8 (a spreadsheet’s “CSV UTF-8”)';

/** What the decoder puts for bytes that are not UTF-8 (a file saved in another encoding). */
const NOT_UTF8 = '\uFFFD';

/** Whether the header line (the text before the first newline) separates with `;` rather than `,`. */
export function separatorOf(firstChunk: string): ',' | ';' {
  const header = firstChunk.split(/\r?\n/, 1)[0] ?? '';
  const count = (c: string) => header.split(c).length - 1;
  return count(';') > count(',') ? ';' : ',';
}

/** The most bytes a row may take in the file (its line, or its lines when a quoted cell holds line breaks). */
export const MAX_ROW_BYTES = 1024 * 1024;

/** A row left out of what the parser reads (too long, or a quote ending a cell early): where it starts, what it took. */
interface Dropped {
  readonly why: 'long' | 'quote';
  /** Lines before the row's first, from where the reading started. */
  readonly linesBefore: number;
  /** Its bytes and line breaks, its record delimiter aside. */
  readonly bytes: number;
  readonly lineBreaks: number;
  /** The index of the cell the quote that did not end it is in. */
  readonly field: number;
}

const QUOTE = 0x22;
const CR = 0x0d;
const LF = 0x0a;
const UTF8_BOM = [0xef, 0xbb, 0xbf];

/**
 * Cuts the file into rows before csv-parse reads it, so that the parser never holds more than
 * `maxBytes` of one row: csv-parse's own `max_record_size` fails the rest of the read, and drops
 * what follows in its chunk, so it cannot refuse one row and go on. Rows are found as csv-parse
 * finds them (with its options of readCsv: quote and escape `"`, the record delimiter the first
 * line break outside quotes shows, a quote opening a cell only at its start and closing it only
 * before a separator, a line break or the end). A row up to `maxBytes` is passed on whole, as it
 * is; a longer one is never held: it is replaced by `marker` and its record delimiter, and
 * `onDropped` hears where it was. So is a row whose quoted cell has a quote that does not end it
 * (`"Un"closed`): csv-parse would read on in the quotes, through the lines after it; here the row
 * ends with its line, and the next line is read as a row. Memory: at most one row of `maxBytes`
 * and one chunk.
 */
export class RowBound {
  private held: Buffer[] = [];
  private rowBytes = 0;
  private rowLineBreaks = 0;
  private linesBefore = 0;
  private lines = 0;
  private quoting = false;
  private escaping = false;
  private fieldEmpty = true;
  /** The index in its row of the cell being read, and of the cell a malformed row went wrong in. */
  private field = 0;
  private malformedField = 0;
  private dropping = false;
  private malformed = false;
  /** The record delimiter once the first line break outside quotes showed it (csv-parse's discovery). */
  private recordDelimiter: Buffer | undefined;
  private carry: Buffer = Buffer.alloc(0);
  private bomChecked: boolean;

  constructor(
    private readonly delimiter: number,
    private readonly maxBytes: number,
    private readonly marker: Buffer,
    private readonly onDropped: (dropped: Dropped) => void,
    fresh: boolean,
  ) {
    this.bomChecked = !fresh;
  }

  /** Bytes of the row read so far that wait for its end (never more than maxBytes). */
  get holding(): number {
    return this.held.reduce((sum, part) => sum + part.length, 0);
  }

  /** What the parser is to read of `chunk` (and of what came before it). */
  write(chunk: Buffer): Buffer[] {
    return this.scan(this.carry.length === 0 ? chunk : Buffer.concat([this.carry, chunk]), false);
  }

  /** What the parser is to read of the file's last bytes. */
  end(): Buffer[] {
    const out = this.scan(this.carry, true);
    if (this.dropping || this.malformed) {
      out.push(this.marker);
      this.drop();
    } else if (this.held.length > 0) out.push(...this.held);
    this.held = [];
    return out;
  }

  private scan(buf: Buffer, ending: boolean): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    if (!this.bomChecked) {
      if (buf.length < UTF8_BOM.length && !ending) {
        this.carry = buf;
        return out;
      }
      this.bomChecked = true;
      if (UTF8_BOM.every((byte, i) => buf[i] === byte)) {
        at = UTF8_BOM.length;
        this.rowBytes += at;
      }
    }
    // A quote's meaning depends on the two bytes after it (a separator, CRLF): they are read with the next chunk.
    const limit = ending ? buf.length : Math.max(at, buf.length - 2);
    /** Where the rows of `buf` not yet passed on begin, and where the row being read begins. */
    let passed = 0;
    let rowStart = 0;
    for (; at < limit; at++) {
      const byte = buf[at]!;
      const length = this.quoting || (byte !== LF && byte !== CR) ? 0 : this.breakAt(buf, at);
      if (length > 0) {
        this.recordDelimiter ??= Buffer.from(buf.subarray(at, at + length));
        this.lines++;
        at += length - 1;
        if (this.dropping || this.malformed) {
          if (passed < rowStart) out.push(buf.subarray(passed, rowStart));
          this.held = [];
          out.push(this.marker, buf.subarray(at + 1 - length, at + 1));
          this.drop();
          passed = at + 1;
        } else if (this.held.length > 0) {
          out.push(...this.held);
          this.held = [];
        }
        rowStart = at + 1;
        this.newRow();
        continue;
      }
      if (byte === LF || (byte === CR && buf[at + 1] !== LF)) {
        this.lines++;
        this.rowLineBreaks++;
      }
      if (++this.rowBytes > this.maxBytes && !this.dropping) {
        // Past the bound: the rows before it go on, what is held of it is let go, the rest of it skipped.
        if (passed < rowStart) out.push(buf.subarray(passed, rowStart));
        passed = rowStart;
        this.dropping = true;
        this.held = [];
      }
      if (this.escaping) {
        this.escaping = false;
        this.fieldEmpty = false;
      } else if (byte === QUOTE && this.quoting) {
        if (buf[at + 1] === QUOTE) this.escaping = true;
        else if (at + 1 >= buf.length || buf[at + 1] === this.delimiter || this.breakAt(buf, at + 1) > 0) {
          this.quoting = false;
        } else {
          // A quote inside a quoted cell that does not end it: the row is malformed, and ends with its line.
          this.malformed = true;
          this.malformedField = this.field;
          this.quoting = false;
          this.fieldEmpty = false;
        }
      } else if (byte === QUOTE && this.fieldEmpty) {
        this.quoting = true;
      } else if (byte === this.delimiter && !this.quoting) {
        this.fieldEmpty = true;
        this.field++;
      } else this.fieldEmpty = false;
    }
    if (passed < rowStart) out.push(buf.subarray(passed, rowStart));
    if (!this.dropping && rowStart < at) this.held.push(buf.subarray(rowStart, at));
    this.carry = buf.subarray(at);
    return out;
  }

  /** The length of the record delimiter at `at` (csv-parse takes the first line break it meets as the file's), or 0. */
  private breakAt(buf: Buffer, at: number): number {
    const known = this.recordDelimiter;
    if (known) {
      if (buf[at] !== known[0]) return 0;
      return known.length === 1 || buf[at + 1] === known[1] ? known.length : 0;
    }
    if (buf[at] === CR) return buf[at + 1] === LF ? 2 : 1;
    return buf[at] === LF ? 1 : 0;
  }

  private drop(): void {
    const why = this.dropping ? 'long' : 'quote';
    this.onDropped({
      why,
      linesBefore: this.linesBefore,
      bytes: this.rowBytes,
      lineBreaks: this.rowLineBreaks,
      field: this.malformedField,
    });
    this.dropping = false;
    this.malformed = false;
  }

  private newRow(): void {
    this.linesBefore = this.lines;
    this.rowBytes = 0;
    this.rowLineBreaks = 0;
    this.fieldEmpty = true;
    this.field = 0;
  }
}

/**
 * The rows of `input` after its header, with columns renamed by `rename` (old name → new). `onHeader`
 * hears the header first (it may throw to refuse the file). With `from`, `input` starts at a row's
 * end in the file, and its rows are read with the header and separator given. A row longer than
 * `maxRowBytes` (MAX_ROW_BYTES) is refused without being held.
 */
export async function* readCsv(
  input: Readable,
  options: {
    rename: ReadonlyMap<string, string>;
    onHeader: (header: CsvHeader) => void;
    from?: CsvResume;
    maxRowBytes?: number;
  },
): AsyncGenerator<CsvRow> {
  const from = options.from;
  const maxRowBytes = options.maxRowBytes ?? MAX_ROW_BYTES;
  const iterator = input[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) {
    if (!from) options.onHeader({ names: [], columns: [], delimiter: ',' });
    return;
  }
  const firstChunk = Buffer.isBuffer(first.value) ? first.value : Buffer.from(String(first.value));
  const delimiter = from?.delimiter ?? separatorOf(firstChunk.subarray(0, 64 * 1024).toString('utf8'));
  const offset = { bytes: from?.bytes ?? 0, lines: from?.lines ?? 0 };
  const parser = parse({
    bom: from === undefined,
    delimiter,
    encoding: 'utf8',
    info: true,
    raw: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
  });
  let columns = from?.columns;
  // Rows the parser refused, each yielded before the first row after it (so that a batch cut after a
  // row holds exactly the refusals before it), and worded then: the parser may refuse a row before
  // the loop below has read the header's columns.
  const refused: { line: number; error: () => string }[] = [];
  // csv-parse counts a CRLF inside quotes as two lines: a text editor, as one.
  let extraLines = 0;
  let lastSkipped = -1;
  parser.on('skip', (error: Error & { lines?: number; code?: string; index?: number }) => {
    // One malformed record may be reported more than once: it is one refused row.
    const line = (error.lines ?? 0) + offset.lines - extraLines;
    const words = () => csvRefusal(error.code, columnName(columns, error.index ?? 0), error.message);
    if (line !== lastSkipped) refused.push({ line, error: words });
    lastSkipped = line;
  });
  // A row too long to read reaches the parser as this cell: a NUL, which no cell may hold, and random bytes.
  const markerText = `\u0000${randomBytes(12).toString('hex')}`;
  const dropped: Dropped[] = [];
  const bound = new RowBound(
    delimiter.charCodeAt(0),
    maxRowBytes,
    Buffer.from(markerText),
    (row) => dropped.push(row),
    from === undefined,
  );
  const feed = (async () => {
    let chunk: Buffer | undefined = firstChunk;
    while (chunk) {
      for (const part of bound.write(chunk)) {
        if (!parser.write(part)) await new Promise((resolve) => parser.once('drain', resolve));
      }
      const next = await iterator.next();
      chunk = next.done ? undefined : Buffer.isBuffer(next.value) ? next.value : Buffer.from(String(next.value));
    }
    for (const part of bound.end()) parser.write(part);
    parser.end();
  })();
  feed.catch((error: Error) => parser.destroy(error));

  /** What the rows left out took in the file beyond their markers. */
  const skipped = { bytes: 0, lines: 0 };
  const before = function* (line: number) {
    refused.sort((a, b) => a.line - b.line);
    while (refused.length > 0 && refused[0]!.line < line) {
      const row = refused.shift()!;
      yield { line: row.line, error: row.error() };
    }
  };
  for await (const { record: texts, info, raw } of parser as AsyncIterable<{
    record: string[];
    info: { lines: number; bytes: number };
    raw: string;
  }>) {
    const own = ownText(raw);
    if (texts.length === 1 && texts[0] === markerText) {
      const row = dropped.shift()!;
      skipped.bytes += row.bytes - Buffer.byteLength(markerText);
      skipped.lines += row.lineBreaks;
      const line = offset.lines + row.linesBefore + 1;
      const long = row.why === 'long';
      if (!columns) {
        throw new CsvFileError(
          long
            ? `has a header line longer than ${sizeOf(maxRowBytes)}: is it a CSV file?`
            : 'has a header line that cannot be read as CSV: a quote inside a quoted column name does not end it',
        );
      }
      yield* before(line);
      yield {
        line,
        error: long
          ? `the row is longer than ${sizeOf(maxRowBytes)}, the most a row may hold: look for a quote (") left open, ` +
            'which runs a cell on across the lines after it'
          : quoteInsideRefusal(columnName(columns, row.field)),
        end: endOf(info),
      };
      continue;
    }
    extraLines += own.split('\r\n').length - 1;
    const end = endOf(info);
    const line = end.lines - (own.match(/\n/g)?.length ?? 0);
    yield* before(line);
    const notUtf8 = texts.findIndex((text) => text.includes(NOT_UTF8));
    if (notUtf8 >= 0) {
      if (!columns) throw new CsvFileError(`has a header line that is not UTF-8 text: ${SAVE_AS_UTF8}`);
      yield { line, error: `${columnName(columns, notUtf8)} is not UTF-8 text: ${SAVE_AS_UTF8}`, end };
      continue;
    }
    if (!columns) {
      const names = texts.map((name) => name.trim());
      columns = names.map((name) => options.rename.get(name) ?? name);
      options.onHeader({ names, columns, delimiter });
      continue;
    }
    const cells = new Map<string, string>();
    columns.forEach((name, i) => {
      if (name !== '' && !cells.has(name)) cells.set(name, texts[i] ?? '');
    });
    yield { line, cells, texts, end };
  }
  await feed;
  yield* before(Number.POSITIVE_INFINITY);
  if (!columns) options.onHeader({ names: [], columns: [], delimiter });

  /** Where a record the parser read ends in the file. */
  function endOf(info: { lines: number; bytes: number }): CsvPosition {
    return {
      bytes: offset.bytes + info.bytes + skipped.bytes,
      lines: offset.lines + info.lines - extraLines + skipped.lines,
    };
  }
}

/** `bytes` as the messages say it: `1 MiB`, `512 KiB`, or bytes. */
function sizeOf(bytes: number): string {
  if (bytes % 1024 ** 2 === 0) return `${bytes / 1024 ** 2} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** A record's own text: its raw text without the empty lines skipped before it and its record delimiter. */
function ownText(raw: string): string {
  return raw.replace(/^(?:\r?\n)+/, '').replace(/\r?\n$/, '');
}
