import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Services } from '../../src/services.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { withServices } from '../helpers/seed.js';

// The console's imports (issue 32): a file uploaded into the database in chunks, its columns
// mapped, read by the job a step at a time, each step going on from where the last committed batch
// ended. A run read in many steps must do exactly what one run of the CLI does with the same file:
// the same rows created, the same refusals at the same lines, across chunk and batch boundaries,
// quoted newlines and `;` separators.

let dir: string;
let database: TestDatabase;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'loyalty-upload-'));
  database = await createTestDatabase();
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await database.drop();
});

/**
 * A file of `rows` customers, `;`-separated with a BOM and CRLF, over 1 MiB (a long ignored
 * column), with a bad email every 97th row, a duplicate every 131st and a quoted newline every 11th.
 */
function bigFile(rows: number): Buffer {
  const lines = ['Mail;Prénom;Solde;notes'];
  for (let i = 1; i <= rows; i++) {
    const email = i % 97 === 0 ? `broken ${i}` : i % 131 === 0 ? `c${i - 1}@up.example` : `c${i}@up.example`;
    const name = i % 11 === 0 ? `"Name\r\nwith a break ${i}"` : `Name ${i}`;
    lines.push(`${email};${name};${i % 7};${'x'.repeat(900)}`);
  }
  return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lines.join('\r\n'))]);
}

/** `data` as a stream in uneven pieces, as a multipart upload arrives. */
function pieces(data: Buffer): Readable {
  const parts: Buffer[] = [];
  for (let at = 0, size = 1; at < data.length; at += size, size = (size * 7 + 13) % 70_000) {
    parts.push(data.subarray(at, at + size));
  }
  return Readable.from(parts);
}

async function customers(services: Services, accountId: number) {
  const found = [];
  let cursor: string | undefined;
  do {
    const page = await services.customers.page(accountId, { limit: 250, ...(cursor ? { cursor } : {}) });
    found.push(...page.customers.map((c) => ({ email: c.email, first_name: c.first_name, points: c.points_balance })));
    cursor = page.metadata.next_cursor ?? undefined;
  } while (cursor);
  return found.sort((a, b) => a.email.localeCompare(b.email));
}

describe('imports uploaded in the console', () => {
  it('reads an upload in many steps exactly as the CLI reads the file in one', async () => {
    const data = bigFile(1400);
    expect(data.length).toBeGreaterThan(1024 * 1024);
    const path = join(dir, 'moving.csv');
    writeFileSync(path, data);
    await withServices(database.url, async (services) => {
      const viaCli = (await services.accounts.create('CLI')).id;
      const viaConsole = (await services.accounts.create('Console')).id;
      const mapping = ['email', 'first_name', 'points_balance', ''];
      const summary = await services.imports.importCustomers(viaCli, path, {
        rename: new Map([
          ['Mail', 'email'],
          ['Prénom', 'first_name'],
          ['Solde', 'points_balance'],
          ['notes', ''],
        ]),
      });

      const upload = await services.imports.upload(viaConsole, 'moving.csv', pieces(data), () => false);
      expect(upload).toMatchObject({
        fileName: 'moving.csv',
        bytesTotal: data.length,
        names: ['Mail', 'Prénom', 'Solde', 'notes'],
      });
      const importId = await services.imports.start(viaConsole, upload.id, mapping);
      let steps = 0;
      const seen: number[] = [];
      // A budget already spent: each step applies one batch, then stops where it ended.
      while (!(await services.imports.step(importId, performance.now()))) {
        steps++;
        const run = await services.imports.progress(viaConsole, importId);
        expect(run.status).toBe('running');
        seen.push(run.bytesRead);
      }
      expect(steps).toBeGreaterThanOrEqual(6);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      const run = await services.imports.progress(viaConsole, importId);
      expect(run).toMatchObject({
        status: 'finished',
        bytesRead: data.length,
        rows: summary.rows,
        created: summary.created,
        updated: summary.updated,
        unchanged: summary.unchanged,
        refused: summary.refused,
      });
      expect(summary).toMatchObject({ rows: 1400, refused: 14 + 10 });
      expect(await services.imports.refusals(importId, 0, 1000)).toEqual(summary.refusals);
      // A quoted newline every 11th row: row i starts on line i + 1 + the breaks before it.
      expect(summary.refusals[0]).toEqual({ line: 97 + 1 + 8, message: expect.stringContaining('email') });
      expect(await customers(services, viaConsole)).toEqual(await customers(services, viaCli));

      // A step of a finished run does nothing; its upload's bytes are gone.
      expect(await services.imports.step(importId, performance.now())).toBe(true);
      expect((await services.imports.progress(viaConsole, importId)).rows).toBe(1400);
    });
  }, 120_000);

  it('goes on after a step the database failed: the run stays running, and no row is applied or counted twice', async () => {
    const rows = Array.from({ length: 700 }, (_, i) => `f${i}@up.example,${i % 5}`);
    const data = Buffer.from(['email,points_balance', ...rows].join('\n'));
    await withServices(database.url, async (services) => {
      const accountId = (await services.accounts.create('Shop')).id;
      const upload = await services.imports.upload(accountId, 'f.csv', Readable.from([data]), () => false);
      const importId = await services.imports.start(accountId, upload.id, ['email', 'points_balance']);
      expect(await services.imports.step(importId, performance.now())).toBe(false);
      // The connection lost half way through the next batch: its transaction rolls back.
      // (The batch's balances are credited after its customers are written.)
      const creditMany = services.pointsTransactions.creditMany;
      services.pointsTransactions.creditMany = () => Promise.reject(new Error('connection lost'));
      await expect(services.imports.step(importId, performance.now())).rejects.toThrow('connection lost');
      services.pointsTransactions.creditMany = creditMany;
      expect(await services.imports.progress(accountId, importId)).toMatchObject({ status: 'running', rows: 200 });
      while (!(await services.imports.step(importId, performance.now()))) {
        // Each step a batch, as the job runner would run them.
      }
      expect(await services.imports.progress(accountId, importId)).toMatchObject({
        status: 'finished',
        rows: 700,
        created: 700,
        refused: 0,
      });
      const all = await customers(services, accountId);
      expect(all).toHaveLength(700);
      expect(all.reduce((sum, customer) => sum + customer.points, 0)).toBe(
        rows.reduce((sum, _, i) => sum + (i % 5), 0),
      );
    });
  });

  // Issue 49 point 12: the mapping step's "Check without importing" is the CLI's --dry-run.
  it('checks an upload without importing as the CLI’s --dry-run checks the file, and stops at its time budget', async () => {
    const data = bigFile(1400);
    const path = join(dir, 'moving.csv');
    writeFileSync(path, data);
    await withServices(database.url, async (services) => {
      const accountId = (await services.accounts.create('Shop')).id;
      const dryRun = await services.imports.importCustomers(accountId, path, {
        rename: new Map([
          ['Mail', 'email'],
          ['Prénom', 'first_name'],
          ['Solde', 'points_balance'],
        ]),
        dryRun: true,
      });
      const upload = await services.imports.upload(accountId, 'moving.csv', pieces(data), () => false);
      const mapping = ['email', 'first_name', 'points_balance', ''];
      const check = await services.imports.check(accountId, upload.id, mapping);
      expect(check).toEqual({ ...dryRun, complete: true, linesRead: 1400 + 1 + Math.floor(1400 / 11) });
      expect(check).toMatchObject({ rows: 1400, created: 1400 - 14 - 10, refused: 24 });
      expect(await customers(services, accountId)).toEqual([]);
      expect(await services.imports.recent(accountId)).toEqual([]);

      // Out of time after its first batch: it says so, and how far it read.
      const cut = await services.imports.check(accountId, upload.id, mapping, { budgetMs: 0, refusalsKept: 1 });
      expect(cut).toMatchObject({ complete: false, rows: 200, refused: 3, refusals: [dryRun.refusals[0]] });
      expect(cut.linesRead).toBe(1 + 200 + Math.floor(200 / 11));

      // The mapping step's samples: the first rows' cells, in the file's order.
      expect(await services.imports.samples(accountId, upload.id, 2)).toEqual([
        ['c1@up.example', 'Name 1', '1', 'x'.repeat(900)],
        ['c2@up.example', 'Name 2', '2', 'x'.repeat(900)],
      ]);
      await expect(services.imports.check(accountId, upload.id, ['', 'first_name', '', ''])).rejects.toMatchObject({
        code: 'invalid_parameter',
        details: [{ field: 'mapping' }],
      });
    });
  });

  it('refuses a file it cannot read, a mapping without email or with a column twice, and another account’s upload', async () => {
    await withServices(database.url, async (services) => {
      const accountId = (await services.accounts.create('Shop')).id;
      const other = (await services.accounts.create('Other')).id;
      const upload = (content: string | Buffer) =>
        services.imports.upload(accountId, 'f.csv', Readable.from([Buffer.from(content)]), () => false);
      await expect(upload('')).rejects.toMatchObject({
        code: 'invalid_parameter',
        message: expect.stringContaining('empty'),
      });
      await expect(upload(Buffer.from([0x45, 0x6d, 0xe9, 0x6c, 0x0a, 0x61, 0x0a]))).rejects.toMatchObject({
        message: expect.stringContaining('UTF-8'),
      });
      await expect(
        services.imports.upload(accountId, 'f.csv', Readable.from([Buffer.from('email\na@b.example\n')]), () => true),
      ).rejects.toMatchObject({ message: expect.stringContaining('larger than') });

      const kept = await upload('Mail,Name,Other name\na@shop.example,A,B\n');
      await expect(services.imports.start(accountId, kept.id, ['', 'first_name', ''])).rejects.toMatchObject({
        code: 'invalid_parameter',
        details: [{ field: 'mapping' }],
        message: expect.stringContaining('no column is read as email'),
      });
      await expect(
        services.imports.start(accountId, kept.id, ['email', 'first_name', 'first_name']),
      ).rejects.toMatchObject({
        details: [{ field: 'mapping.2', message: expect.stringContaining('first_name is already read from "Name"') }],
      });
      await expect(services.imports.start(accountId, kept.id, ['email', 'favourite_colour', ''])).rejects.toMatchObject(
        {
          details: [{ field: 'mapping.1' }],
        },
      );
      await expect(services.imports.start(other, kept.id, ['email', '', ''])).rejects.toMatchObject({
        code: 'not_found',
      });
      await expect(services.imports.uploaded(other, kept.id)).rejects.toMatchObject({ code: 'not_found' });
      // Nothing started by any of them.
      expect(await services.imports.recent(accountId)).toEqual([]);
    });
  });
});
