import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDb } from '../../src/storage/db.js';
import { cliChecks, loyalty } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { unbalancedCustomers } from '../helpers/engine.js';
import { withServices } from '../helpers/seed.js';

// Issue 49 point 3: an imported balance was credited once per file *name*: the same rows under
// another name, a fixed copy or a re-imported export credited every balance again (250 → 500 and a
// tier up), and a second file named like an earlier one had its balances ignored. A customer's
// opening balance is now imported once per customer, enforced by the database; a later file's is
// refused by line, naming the earlier import, unless the run sets balances to the file's.

let dir: string;
let database: TestDatabase;
let env: Record<string, string>;
let account: string;
let accountId: number;
const { ok } = cliChecks(() => env);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'loyalty-opening-'));
  database = await createTestDatabase();
  env = { DATABASE_URL: database.url };
  accountId = (await ok(['accounts', 'create', '--name', 'Movers'])).id;
  account = String(accountId);
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await database.drop();
});

const file = (name: string, lines: string[], end = '\n') => {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `${lines.join(end)}${end}`);
  return path;
};
const importing = (path: string, ...extra: string[]) =>
  ok(['import', 'customers', '--account', account, '--file', path, ...extra]);

/** Each customer's balance and tier by email, and their ledger: `[email, change, description]`. */
async function state() {
  const db = openDb(database.url);
  try {
    const k = db.kysely;
    const customers = await k
      .selectFrom('customers')
      .select(['email', 'points_balance', 'vip_tier_id'])
      .where('account_id', '=', accountId)
      .orderBy('email')
      .execute();
    const ledger = await k
      .selectFrom('points_transactions')
      .innerJoin('customers', 'customers.id', 'points_transactions.customer_id')
      .select(['customers.email', 'points_change', 'description'])
      .where('points_transactions.account_id', '=', accountId)
      .orderBy('points_transactions.id')
      .execute();
    return {
      balances: Object.fromEntries(customers.map((c) => [c.email, Number(c.points_balance)])),
      tiers: Object.fromEntries(customers.map((c) => [c.email, c.vip_tier_id === null ? null : Number(c.vip_tier_id)])),
      ledger: ledger.map((t) => [t.email, Number(t.points_change), t.description]),
      unbalanced: await unbalancedCustomers(k),
    };
  } finally {
    await db.close();
  }
}

const idOf = async (email: string) =>
  (await ok(['customers', 'list', '--account', account])).find((c: { email: string }) => c.email === email).id;

const ROWS = ['email,first_name,points_balance', 'ann@shop.example,Ann,250', 'bob@shop.example,Bob,100'];

describe('an opening balance imported once per customer (issue 49)', () => {
  it('is not credited again by the same rows under another name, or a fixed copy: the rows are refused by line', async () => {
    const gold = (await ok(['vip-tiers', 'create', '--account', account, '--name', 'Gold', '--milestone', '400'])).id;
    const first = await importing(file('customers.csv', ROWS));
    expect(first).toMatchObject({ created: 2, refused: 0 });
    const firstRun = await withServices(database.url, async (s) => (await s.imports.recent(accountId))[0]!.id);
    const after = await state();
    expect(after.balances).toEqual({ 'ann@shop.example': 250, 'bob@shop.example': 100 });

    // The very same bytes under another name: the balances are that file's already.
    expect(await importing(file('customers (1).csv', ROWS))).toMatchObject({ unchanged: 2, refused: 0 });
    // The same rows saved again by a spreadsheet (CRLF), and a fixed copy: other files.
    const ann = await idOf('ann@shop.example');
    const bob = await idOf('bob@shop.example');
    const refusedAnn = (line: number) => ({
      line,
      message:
        `customer ${ann} already has an imported balance (250 points, import ${firstRun} of customers.csv, line 2): ` +
        'a balance is imported once per customer; to replace it with this file’s, import again with --set-balances ' +
        '(in the console: “Set balances to this file’s”)',
    });
    expect(await importing(file('customers (2).csv', ROWS, '\r\n'))).toEqual({
      rows: 2,
      created: 0,
      updated: 0,
      unchanged: 0,
      refused: 2,
      refusals: [refusedAnn(2), { line: 3, message: expect.stringContaining(`customer ${bob} already has`) }],
    });
    const fixed = await importing(
      file('fixed.csv', ['email,first_name,points_balance', 'new@shop.example,New,40', 'ann@shop.example,Anne,300']),
    );
    expect(fixed).toMatchObject({ rows: 2, created: 1, refused: 1, refusals: [refusedAnn(3)] });
    const end = await state();
    // Nothing credited twice, no tier up; a refused row changes nothing (Ann's name too).
    expect(end.balances).toEqual({ 'ann@shop.example': 250, 'bob@shop.example': 100, 'new@shop.example': 40 });
    expect(end.tiers['ann@shop.example']).not.toBe(gold);
    expect(end.ledger).toEqual([
      ['ann@shop.example', 250, 'Imported balance'],
      ['bob@shop.example', 100, 'Imported balance'],
      ['new@shop.example', 40, 'Imported balance'],
    ]);
    expect((await ok(['customers', 'show', String(ann)])).first_name).toBe('Ann');
    // A dry run reports the same refusals and writes nothing.
    expect(await importing(join(dir, 'fixed.csv'), '--dry-run')).toMatchObject({ refused: 1, unchanged: 1 });
    expect(await state()).toEqual(end);
  });

  it('refuses the balances of an export imported back into its own account', async () => {
    await importing(file('customers.csv', ROWS));
    const exported = join(dir, 'export.csv');
    await ok(['export', 'customers', '--account', account, '--output', exported]);
    const again = await importing(exported);
    expect(again).toMatchObject({ rows: 2, refused: 2 });
    expect(again.refusals.map((r: { line: number }) => r.line)).toEqual([2, 3]);
    expect((await state()).balances).toEqual({ 'ann@shop.example': 250, 'bob@shop.example': 100 });
    expect(readFileSync(exported, 'utf8')).toContain('ann@shop.example');
  });

  it('imports the balances of a second file with an earlier one’s name, refusing those already imported', async () => {
    await importing(file('one/customers.csv', ROWS));
    const second = await importing(
      file('two/customers.csv', ['email,points_balance', 'cat@shop.example,70', 'ann@shop.example,90']),
    );
    expect(second).toMatchObject({ created: 1, refused: 1, refusals: [{ line: 3 }] });
    expect((await state()).balances).toEqual({
      'ann@shop.example': 250,
      'bob@shop.example': 100,
      'cat@shop.example': 70,
    });
  });

  it('sets balances to the file’s with --set-balances: one transaction of the difference, never below 0', async () => {
    await importing(file('customers.csv', [...ROWS, 'cy@shop.example,Cy,10']));
    const ann = await idOf('ann@shop.example');
    const bob = await idOf('bob@shop.example');
    await withServices(database.url, async (s) => {
      await s.pointsTransactions.adjust(accountId, { customer_id: ann, points_change: -20 });
      await s.pointsTransactions.adjust(accountId, { customer_id: bob, points_change: -90 });
    });
    const path = file('fixed.csv', [
      'email,points_balance,points_earned',
      'ann@shop.example,100,',
      'bob@shop.example,0,',
      'cy@shop.example,30,50',
      'dee@shop.example,5,',
    ]);
    // What it would do, written nowhere.
    const before = await state();
    const dry = await importing(path, '--set-balances', '--dry-run');
    expect(await state()).toEqual(before);

    const set = await importing(path, '--set-balances');
    expect(set).toEqual(dry);
    expect(set).toEqual({
      rows: 4,
      created: 1,
      updated: 2,
      unchanged: 0,
      refused: 1,
      refusals: [
        {
          line: 3,
          message:
            `points_balance 0 would take customer ${bob}'s balance below 0: their imported balance was 100 ` +
            '(import 1 of customers.csv, line 3) and they hold 10 points',
        },
      ],
    });
    const after = await state();
    // Ann spent 20 of 250: set to 100, she keeps what she did since (80); Bob's 10 stays.
    expect(after.balances).toEqual({
      'ann@shop.example': 80,
      'bob@shop.example': 10,
      'cy@shop.example': 30,
      'dee@shop.example': 5,
    });
    expect(after.ledger.slice(before.ledger.length)).toEqual([
      ['ann@shop.example', -150, 'Imported balance corrected'],
      ['cy@shop.example', 20, 'Imported balance corrected'],
      ['dee@shop.example', 5, 'Imported balance'],
    ]);
    expect((await ok(['customers', 'show', String(await idOf('cy@shop.example'))])).vip_status.progress_value).toBe(50);
    expect(after.unbalanced).toEqual([]);
    // Run again, with or without the flag: these balances are this file's now.
    expect(await importing(path, '--set-balances')).toMatchObject({ unchanged: 3, refused: 1 });
    expect(await importing(path)).toMatchObject({ unchanged: 3, refused: 1 });
    expect((await state()).ledger).toEqual(after.ledger);
  });

  it('never counts points earned twice when files with lower and higher earned figures alternate', async () => {
    await importing(file('customers.csv', ['email,points_balance,points_earned', 'earn@shop.example,100,1000']));
    const earned = async () =>
      (await ok(['customers', 'show', String(await idOf('earn@shop.example'))])).vip_status.progress_value;
    expect(await earned()).toBe(1000);
    const lower = file('lower.csv', ['email,points_balance,points_earned', 'earn@shop.example,100,100']);
    const again = file('again.csv', ['email,points_balance,points_earned', 'earn@shop.example,100,1000']);
    for (const path of [lower, again, lower, again]) {
      await importing(path, '--set-balances');
      // The ledger never lowers points earned, and what was counted is not counted again.
      expect(await earned(), path).toBe(1000);
    }
    const raised = file('raised.csv', ['email,points_balance,points_earned', 'earn@shop.example,300,1500']);
    await importing(raised, '--set-balances');
    expect(await earned()).toBe(1500);
    await importing(again, '--set-balances');
    expect(await earned()).toBe(1500);
    expect((await state()).unbalanced).toEqual([]);
  });

  it('credits each balance once when two imports of the same balances race (real processes)', async () => {
    const count = 450;
    const emails = Array.from({ length: count }, (_, i) => `r${i}@shop.example`);
    await importing(file('people.csv', ['email', ...emails]));
    // The same balances in two files that are not the same bytes.
    const lines = emails.map((email, i) => `${email},${i + 1}`);
    const a = file('a.csv', ['email,points_balance', ...lines]);
    const b = file('b.csv', ['email,points_balance', ...lines], '\r\n');
    const runs = await Promise.all(
      [a, b].map((path) => loyalty(['import', 'customers', '--account', account, '--file', path, '--json'], env)),
    );
    const summaries = runs.map((run) => {
      expect(run.code, run.stderr).toBe(0);
      return run.json();
    });
    // Every row of one file credited, the other's refused, whichever won each customer.
    expect(summaries[0].refused + summaries[1].refused).toBe(count);
    expect(summaries[0].updated + summaries[1].updated).toBe(count);
    const { balances, ledger, unbalanced } = await state();
    expect(ledger).toHaveLength(count);
    expect(emails.map((email) => balances[email])).toEqual(lines.map((_, i) => i + 1));
    expect(unbalanced).toEqual([]);
  }, 60_000);
});
