import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';

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

/** What the decoder puts for bytes that are not UTF-8 (a file saved in another encoding). */
const NOT_UTF8 = '\uFFFD';

/** Whether the header line (the text before the first newline) separates with `;` rather than `,`. */
export function separatorOf(firstChunk: string): ',' | ';' {
  const header = firstChunk.split(/\r?\n/, 1)[0] ?? '';
  const count = (c: string) => header.split(c).length - 1;
  return count(';') > count(',') ? ';' : ',';
}

/**
 * The rows of `input` after its header, with columns renamed by `rename` (old name → new). `onHeader`
 * hears the header first (it may throw to refuse the file). With `from`, `input` starts at a row's
 * end in the file, and its rows are read with the header and separator given.
 */
export async function* readCsv(
  input: Readable,
  options: {
    rename: ReadonlyMap<string, string>;
    onHeader: (header: CsvHeader) => void;
    from?: CsvResume;
  },
): AsyncGenerator<CsvRow> {
  const from = options.from;
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
  const refused: CsvRow[] = [];
  let lastSkipped = -1;
  parser.on('skip', (error: Error & { lines?: number }) => {
    // One malformed record may be reported more than once: it is one refused row.
    const line = (error.lines ?? 0) + offset.lines - extraLines;
    if (line !== lastSkipped) refused.push({ line, error: `cannot be read as CSV: ${error.message}` });
    lastSkipped = line;
  });
  const feed = (async () => {
    let chunk: Buffer | undefined = firstChunk;
    while (chunk) {
      if (!parser.write(chunk)) await new Promise((resolve) => parser.once('drain', resolve));
      const next = await iterator.next();
      chunk = next.done ? undefined : Buffer.isBuffer(next.value) ? next.value : Buffer.from(String(next.value));
    }
    parser.end();
  })();
  feed.catch((error: Error) => parser.destroy(error));

  let columns = from?.columns;
  let extraLines = 0;
  for await (const { record: texts, info, raw } of parser as AsyncIterable<{
    record: string[];
    info: { lines: number; bytes: number };
    raw: string;
  }>) {
    while (refused.length > 0) yield refused.shift()!;
    // csv-parse counts a CRLF inside quotes as two lines: a text editor, as one.
    const own = ownText(raw);
    extraLines += own.split('\r\n').length - 1;
    const end = { bytes: offset.bytes + info.bytes, lines: offset.lines + info.lines - extraLines };
    const line = end.lines - (own.match(/\n/g)?.length ?? 0);
    if (texts.some((text) => text.includes(NOT_UTF8))) {
      if (!columns) throw new CsvFileError('the header line is not UTF-8 text: save the file as UTF-8');
      yield { line, error: 'is not UTF-8 text: save the file as UTF-8', end };
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
    yield { line, cells, end };
  }
  await feed;
  while (refused.length > 0) yield refused.shift()!;
  if (!columns) options.onHeader({ names: [], columns: [], delimiter });
}

/** A record's own text: its raw text without the empty lines skipped before it and its record delimiter. */
function ownText(raw: string): string {
  return raw.replace(/^(?:\r?\n)+/, '').replace(/\r?\n$/, '');
}
