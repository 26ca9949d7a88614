import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';

// Reading a CSV file row by row with csv-parse (quotes, embedded newlines, a byte-order mark,
// CRLF), streamed: memory stays flat whatever the file's size. The separator is `,` or `;`, as the
// header line uses. Every cell is checked to be UTF-8; each row knows the physical line it starts on.

/** A row of the file: its line (the header is line 1) and its cells by (mapped) column name, or why it cannot be read. */
export type CsvRow =
  | { readonly line: number; readonly cells: ReadonlyMap<string, string>; readonly error?: undefined }
  | { readonly line: number; readonly error: string };

/** A file that cannot be imported at all (its header). */
export class CsvFileError extends Error {}

/** The file's header, once read: its columns after `--map`. */
export interface CsvHeader {
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
 * hears the header first (it may throw to refuse the file); `onBytes` how many bytes were read so far.
 */
export async function* readCsv(
  input: Readable,
  options: {
    rename: ReadonlyMap<string, string>;
    onHeader: (header: CsvHeader) => void;
    onBytes?: (bytes: number) => void;
  },
): AsyncGenerator<CsvRow> {
  const iterator = input[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) {
    options.onHeader({ columns: [] });
    return;
  }
  const firstChunk = Buffer.isBuffer(first.value) ? first.value : Buffer.from(String(first.value));
  const parser = parse({
    bom: true,
    delimiter: separatorOf(firstChunk.subarray(0, 64 * 1024).toString('utf8')),
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
    const line = error.lines ?? 0;
    if (line !== lastSkipped) refused.push({ line, error: `cannot be read as CSV: ${error.message}` });
    lastSkipped = line;
  });
  let bytes = 0;
  const feed = (async () => {
    let chunk: Buffer | undefined = firstChunk;
    while (chunk) {
      bytes += chunk.length;
      if (!parser.write(chunk)) await new Promise((resolve) => parser.once('drain', resolve));
      const next = await iterator.next();
      chunk = next.done ? undefined : Buffer.isBuffer(next.value) ? next.value : Buffer.from(String(next.value));
    }
    parser.end();
  })();
  feed.catch((error: Error) => parser.destroy(error));

  let columns: string[] | undefined;
  for await (const { record: texts, info, raw } of parser as AsyncIterable<{
    record: string[];
    info: { lines: number };
    raw: string;
  }>) {
    while (refused.length > 0) yield refused.shift()!;
    options.onBytes?.(bytes);
    const line = startLine(info.lines, raw);
    if (texts.some((text) => text.includes(NOT_UTF8))) {
      if (!columns) throw new CsvFileError('the header line is not UTF-8 text: save the file as UTF-8');
      yield { line, error: 'is not UTF-8 text: save the file as UTF-8' };
      continue;
    }
    if (!columns) {
      columns = texts.map((name) => {
        const trimmed = name.trim();
        return options.rename.get(trimmed) ?? trimmed;
      });
      options.onHeader({ columns });
      continue;
    }
    const cells = new Map<string, string>();
    columns.forEach((name, i) => {
      if (name !== '' && !cells.has(name)) cells.set(name, texts[i] ?? '');
    });
    yield { line, cells };
  }
  await feed;
  while (refused.length > 0) yield refused.shift()!;
  if (!columns) options.onHeader({ columns: [] });
}

/**
 * The physical line a record starts on, from the line it ends on and its raw text (which holds the
 * empty lines skipped before it, and its own newlines inside quotes).
 */
function startLine(endLine: number, raw: string): number {
  const own = raw.replace(/^(?:\r?\n)+/, '').replace(/\r?\n$/, '');
  return endLine - (own.match(/\n/g)?.length ?? 0);
}
