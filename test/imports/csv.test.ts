import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type CsvRow, RowBound, readCsv } from '../../src/imports/csv.js';

// Issue 49, points 4 and 5: a malformed line (a stray quote) or a row past the bound is a refusal
// naming its line, and the rest of the file is read; the parser never holds more than the bound of
// one row, however long the line (a 200 MB line took the CLI to 1.35 GB).

/** `text` in pieces of `size` bytes, as a file or an upload arrives. */
const pieces = (text: string | Buffer, size: number) => {
  const data = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const parts: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) parts.push(data.subarray(at, at + size));
  return Readable.from(parts);
};

/** Every row read: `[line, email or error]`, and where the last one ends. */
async function read(
  input: Readable,
  options: { maxRowBytes?: number; from?: Parameters<typeof readCsv>[1]['from'] } = {},
) {
  const rows: [number, string][] = [];
  let last: CsvRow | undefined;
  for await (const row of readCsv(input, { rename: new Map(), onHeader: () => undefined, ...options })) {
    rows.push([row.line, row.error ?? row.cells.get('email') ?? '']);
    last = row;
  }
  return { rows, end: last?.end };
}

describe('reading a CSV file', () => {
  it('refuses a line with a stray quote, naming it, and reads the rest (issue 49 point 4)', async () => {
    for (const size of [3, 64 * 1024]) {
      const { rows } = await read(
        pieces(
          'email,first_name\nqa1@x.example,a"b\nqa2@x.example,"c"d"\nqa3@x.example,"e""f"\nqa4@x.example,g\n',
          size,
        ),
      );
      expect(rows).toEqual([
        // Each names its column, read from the header even when the parser refused the row before it.
        [
          2,
          'first_name has a quote (") inside a cell that does not start with one: a cell holding quotes must be in ' +
            'quotes, each quote inside it doubled, such as "Bob ""the builder"""',
        ],
        [
          3,
          'first_name has a quote (") inside its quoted text that does not end it: write each quote inside a quoted ' +
            'cell twice, such as "Bob ""the builder"""',
        ],
        [4, 'qa3@x.example'],
        [5, 'qa4@x.example'],
      ]);
    }
  });

  it('refuses a row past the bound by its line, without holding it, and reads on (issue 49 point 5)', async () => {
    const bound = 1000;
    const file = [
      'email,notes',
      'a@x.example,short',
      `b@x.example,${'x'.repeat(5 * bound)}`,
      'c@x.example,"two\r\nlines"',
      `d@x.example,"${'y\n'.repeat(2 * bound)}"`,
      'e@x.example,"quoted, with ""quotes"""',
      `f@x.example,${','.repeat(2 * bound)}`,
      'g@x.example,last',
    ].join('\r\n');
    for (const size of [1, 7, 4096]) {
      const { rows, end } = await read(pieces(file, size), { maxRowBytes: bound });
      const long =
        'the row is longer than 1000 bytes, the most a row may hold: look for a quote (") left open, which runs a ' +
        'cell on across the lines after it';
      expect(rows).toEqual([
        [2, 'a@x.example'],
        [3, long],
        [4, 'c@x.example'],
        [6, long],
        [6 + 2 * bound + 1, 'e@x.example'],
        [6 + 2 * bound + 2, long],
        [6 + 2 * bound + 3, 'g@x.example'],
      ]);
      // Where the last row ends is the file's end, counted in the file's bytes and lines.
      expect(end).toEqual({ bytes: Buffer.byteLength(file), lines: 6 + 2 * bound + 3 });
    }
  });

  it('goes on from a row’s end past a row too long, counting the file’s lines and bytes', async () => {
    const bound = 100;
    const rows = ['email', 'a@x.example', `${'z'.repeat(500)}@x.example`, 'b@x.example', 'c@x.example'];
    const file = Buffer.from(`${rows.join('\n')}\n`);
    const whole = await read(pieces(file, 16), { maxRowBytes: bound });
    const resumeAt = Buffer.from(`${rows.slice(0, 4).join('\n')}\n`).length;
    const from = { bytes: resumeAt, lines: 4, delimiter: ',' as const, columns: ['email'] };
    const rest = await read(pieces(file.subarray(resumeAt), 16), { maxRowBytes: bound, from });
    expect(whole.rows[1]).toEqual([3, expect.stringContaining('is longer than 100 bytes')]);
    expect(whole.rows.slice(3)).toEqual(rest.rows);
    expect(rest.rows).toEqual([[5, 'c@x.example']]);
    expect(rest.end).toEqual(whole.end);
  });

  it('never holds more than the bound of one row, however long the line', () => {
    const bound = 64 * 1024;
    const marker = Buffer.from('\u0000marker');
    const dropped: unknown[] = [];
    const rows = new RowBound(0x2c, bound, marker, (row) => dropped.push(row), true);
    const passed: Buffer[] = [];
    passed.push(...rows.write(Buffer.from('email,notes\na@x.example,')));
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let most = 0;
    // 32 MiB on one line, a chunk at a time.
    for (let i = 0; i < 512; i++) {
      passed.push(...rows.write(chunk));
      most = Math.max(most, rows.holding);
    }
    passed.push(...rows.write(Buffer.from('\nb@x.example,ok\n')), ...rows.end());
    expect(most).toBeLessThanOrEqual(bound);
    expect(Buffer.concat(passed).toString()).toBe('email,notes\n\u0000marker\nb@x.example,ok\n');
    expect(dropped).toEqual([{ why: 'long', linesBefore: 1, bytes: 12 + 512 * chunk.length, lineBreaks: 0, field: 0 }]);
  });
});
