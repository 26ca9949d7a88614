import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_ROW_BYTES } from '../../src/imports/csv.js';
import { openDb } from '../../src/storage/db.js';
import { cliChecks, loyalty } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { unbalancedCustomers } from '../helpers/engine.js';
import { ROOT } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';

// `loyalty import customers` (issue 32): every kind of bad row refused with its line while the
// good ones go in with their balances, points earned, tiers and identities; a second run changes
// nothing; a run killed half way and run again applies every row once; --dry-run writes nothing.

let dir: string;
let database: TestDatabase;
let env: Record<string, string>;
let account: string;
const { ok, fails } = cliChecks(() => env);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'loyalty-import-'));
  database = await createTestDatabase();
  env = { DATABASE_URL: database.url };
  account = String((await ok(['accounts', 'create', '--name', 'Movers'])).id);
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await database.drop();
});

const file = (name: string, content: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};
const importing = (path: string, ...extra: string[]) =>
  ok(['import', 'customers', '--account', account, '--file', path, ...extra]);
const viaCli = (path: string, ...extra: string[]) =>
  ok(['import', 'customers', '--account', account, '--file', path, ...extra], loyalty);

/** Everything an import writes that a second run must leave as it is. */
async function snapshot() {
  const db = openDb(database.url);
  try {
    const k = db.kysely;
    return {
      customers: await k.selectFrom('customers').selectAll().orderBy('id').execute(),
      ledger: await k.selectFrom('points_transactions').selectAll().orderBy('id').execute(),
      identities: await k.selectFrom('customer_identities').selectAll().orderBy('id').execute(),
      events: await k.selectFrom('events').select(['id', 'type']).orderBy('id').execute(),
      balances: await k.selectFrom('opening_balances').selectAll().orderBy('customer_id').execute(),
      unbalanced: await unbalancedCustomers(k),
    };
  } finally {
    await db.close();
  }
}

const customerByEmail = async (email: string) =>
  (await ok(['customers', 'list', '--account', account])).find((c: { email: string }) => c.email === email);

describe('loyalty import customers', () => {
  it('refuses every kind of bad row with its line and imports the good ones', async () => {
    const gold = await ok(['vip-tiers', 'create', '--account', account, '--name', 'Gold', '--milestone', '400']);
    const path = file(
      'customers.csv',
      Buffer.concat([
        Buffer.from(
          '\ufeffE-mail;first_name;last_name;date_of_birth;state;Points;points_earned;distinct_id\r\n' +
            'jane@example.com;Jane;Doe;1990-04-01;member;120;500;crm-1\r\n' +
            '"bob@example.com";"Bob ""the builder""\nSmith";;;candidate;0;;\r\n' +
            'not-an-email;X;;;;5;;\r\n' +
            'JANE@example.com;Again;;;;1;;\r\n' +
            'neg@example.com;N;;;;-5;;\r\n' +
            'formula@example.com;"=HYPERLINK(""http://evil"")";;;;1;;\r\n' +
            'state@example.com;S;;;sleepy;1;;\r\n' +
            'utf@example.com;',
        ),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(';;;;1;;\r\n\r\nlast@example.com;Last;;;;7;;\r\n'),
      ]),
    );
    const summary = await importing(path, '--map', 'E-mail=email', '--map', 'Points=points_balance');
    expect(summary).toEqual({
      rows: 9,
      created: 3,
      updated: 0,
      unchanged: 0,
      refused: 6,
      refusals: [
        { line: 5, message: expect.stringContaining('email') },
        { line: 6, message: "email is the same as line 2's: a customer appears once per file" },
        { line: 7, message: 'points_balance must be a whole number of points, 0 or more, such as 120, got "-5"' },
        {
          line: 8,
          message:
            'first_name must not start with =, +, - or @ (a spreadsheet would run it as a formula), got ' +
            '"=HYPERLINK("http://evil")": remove that first character',
        },
        { line: 9, message: 'state must be candidate, member or disabled, got "sleepy"' },
        { line: 10, message: 'first_name is not UTF-8 text: save the file as UTF-8 (a spreadsheet’s “CSV UTF-8”)' },
        // Line 11 is empty; line 12 is good.
      ],
    });
    const jane = await ok(['customers', 'show', String((await customerByEmail('jane@example.com')).id)]);
    expect(jane).toMatchObject({
      first_name: 'Jane',
      last_name: 'Doe',
      date_of_birth: '1990-04-01',
      state: 'member',
      points_balance: 120,
      vip_tier_id: gold.id,
      vip_status: { progress_value: 500 },
    });
    const bob = await ok(['customers', 'show', String((await customerByEmail('bob@example.com')).id)]);
    expect(bob).toMatchObject({ first_name: 'Bob "the builder"\nSmith', state: 'candidate', points_balance: 0 });
    expect((await customerByEmail('last@example.com')).email).toBe('last@example.com');
    const state = await snapshot();
    expect(state.unbalanced).toEqual([]);
    expect(state.ledger.map((t) => [t.points_change, t.description])).toEqual([
      [120, 'Imported balance'],
      [7, 'Imported balance'],
    ]);
    expect(state.identities.map((i) => [i.distinct_id, i.customer_id])).toEqual([['crm-1', jane.id]]);
  });

  it('changes nothing the second time, and --dry-run writes nothing', async () => {
    const rows = Array.from({ length: 450 }, (_, i) => `c${i}@example.com,C${i},,${i % 7},,id-${i}`);
    const path = file(
      'big.csv',
      `email,first_name,last_name,points_balance,points_earned,distinct_id\n${rows.join('\n')}\n`,
    );
    const before = await snapshot();
    const dry = await importing(path, '--dry-run');
    expect(dry).toMatchObject({ rows: 450, created: 450, refused: 0 });
    expect(await snapshot()).toEqual(before);

    expect(await importing(path)).toMatchObject({ rows: 450, created: 450, updated: 0, unchanged: 0, refused: 0 });
    const first = await snapshot();
    expect(first.ledger).toHaveLength(rows.filter((_, i) => i % 7 !== 0).length);
    expect(await importing(path)).toEqual({
      rows: 450,
      created: 0,
      updated: 0,
      unchanged: 450,
      refused: 0,
      refusals: [],
    });
    expect(await snapshot()).toEqual(first);
    // A dry run after it says the same.
    expect(await importing(path, '--dry-run')).toMatchObject({ unchanged: 450 });
  });

  it('refuses a file without an email column, naming its columns, and writes nothing', async () => {
    const path = file('nope.csv', 'Mail,Points\na@example.com,5\n');
    const error = await fails(['import', 'customers', '--account', account, '--file', path]);
    expect(error.code).toBe('invalid_parameter');
    expect(error.message).toContain('has no "email" column (its columns: Mail, Points)');
    expect(
      await fails(['import', 'customers', '--account', account, '--file', join(dir, 'missing.csv')]),
    ).toMatchObject({
      code: 'invalid_parameter',
    });
    expect((await snapshot()).customers).toEqual([]);
  });

  it('refuses a --map naming a column the file does not have, or one the import does not read (issue 49)', async () => {
    const path = file('mapped.csv', 'Mail,Points\na@example.com,5\n');
    const typo = await fails(['import', 'customers', '--account', account, '--file', path, '--map', 'Mial=email']);
    expect(typo).toMatchObject({ code: 'invalid_parameter', details: [{ field: 'map' }] });
    expect(typo.message).toContain('names "Mial", which is not a column of the file (its columns: Mail, Points)');
    const unread = await fails([
      ...['import', 'customers', '--account', account, '--file', path],
      ...['--map', 'Mail=email', '--map', 'Points=points'],
    ]);
    expect(unread.message).toContain('maps "Points" to "points", which the import does not read');
    expect((await snapshot()).customers).toEqual([]);
  });

  it('shows a progress bar on stderr and the summary as text without --json', async () => {
    const path = file('few.csv', 'email,points_balance\na@example.com,5\nbad,1\n');
    const result = await loyalty(['import', 'customers', '--account', account, '--file', path], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('imported: 2 rows: 1 created, 0 updated, 0 unchanged, 1 refused');
    expect(result.stdout).toContain('line 3: email');
    expect(result.stderr).toMatch(/\[#+\] 100% · 2 rows · [\d,]+ rows\/s · 0:00 left · 1 refused/);
  });

  it('finishes a run killed half way when run again: every row once', async () => {
    const count = 6000;
    const rows = Array.from({ length: count }, (_, i) => `k${i}@example.com,${(i % 50) + 1}`);
    const path = file('killed.csv', `email,points_balance\n${rows.join('\n')}\n`);
    const child = spawn(
      process.execPath,
      [`${ROOT}bin/loyalty.js`, 'import', 'customers', '--account', account, '--file', path, '--json'],
      { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const db = openDb(database.url);
    try {
      const started = await eventually(
        async () => {
          const run = await db.kysely.selectFrom('imports').select('rows').executeTakeFirst();
          return run !== undefined && Number(run.rows) >= 1000;
        },
        60_000,
        20,
      );
      expect(started).toBe(true);
      child.kill('SIGKILL');
      await exited;
      const half = await db.kysely
        .selectFrom('points_transactions')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirst();
      expect(Number(half!.n)).toBeGreaterThan(0);
      expect(Number(half!.n)).toBeLessThan(count);
    } finally {
      await db.close();
    }
    const again = await importing(path);
    expect(again.rows).toBe(count);
    expect(again.refused).toBe(0);
    expect(again.created + again.unchanged + again.updated).toBe(count);
    const state = await snapshot();
    expect(state.customers).toHaveLength(count);
    expect(state.ledger).toHaveLength(count);
    expect(new Set(state.ledger.map((t) => t.customer_id)).size).toBe(count);
    expect(state.unbalanced).toEqual([]);
  }, 120_000);
});

const emails = async () =>
  (await ok(['customers', 'list', '--account', account])).map((c: { email: string }) => c.email).sort();

// Issue 49 point 12: a refused row says its line, its column, what was wrong and what the column
// accepts, never JSON Schema's words ("must match format", "must be integer") nor its paths; the
// command's own refusals (--map, --file) too, each with the contract's code.
describe('loyalty import customers refusals, in words', () => {
  it('says the line, the column, the cell and what the column accepts', async () => {
    const path = file(
      'words.csv',
      [
        'email,first_name,date_of_birth,state,points_balance,points_earned',
        'ok@x.example,Ok,,,,',
        'not-an-email,A,,,,',
        ',No email,,,,',
        'date@x.example,D,01/02/1990,,,',
        'state@x.example,S,,sleepy,,',
        'half@x.example,H,,,12.5,',
        'neg@x.example,N,,,-5,',
        'earned@x.example,E,,,10,5',
        `long@x.example,${'L'.repeat(300)},,,,`,
        'huge@x.example,G,,,9007199254740992,',
        '',
      ].join('\n'),
    );
    const result = await loyalty(['import', 'customers', '--account', account, '--file', path], env);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toEqual([
      'imported: 10 rows: 1 created, 0 updated, 0 unchanged, 9 refused',
      '  line 3: email must be an email address, such as name@example.com (at most 254 characters), got "not-an-email"',
      '  line 4: email is empty: every row needs the customer’s email address',
      '  line 5: date_of_birth must be a date written YYYY-MM-DD, such as 1990-04-01, got "01/02/1990"',
      '  line 6: state must be candidate, member or disabled, got "sleepy"',
      '  line 7: points_balance must be a whole number of points, 0 or more, such as 120, got "12.5"',
      '  line 8: points_balance must be a whole number of points, 0 or more, such as 120, got "-5"',
      '  line 9: points_earned must be at least points_balance (10), got "5": points earned include the points held',
      '  line 10: first_name must be at most 255 characters long, got 300',
      '  line 11: points_balance must be at most 9,007,199,254,740,991 points, got "9007199254740992"',
    ]);
    expect(result.stdout).not.toMatch(/must match|must be integer|must be >=|must NOT|\/[a-z_]+ |row\./);
    // --json: the same words, by line.
    const summary = await importing(path, '--dry-run');
    expect(summary.refusals.map((r: { line: number; message: string }) => `  line ${r.line}: ${r.message}`)).toEqual(
      lines.slice(1),
    );
  });

  it('refuses a --map without "=", a --file that is not there, and a file without email, in words', async () => {
    const path = file('mail.csv', 'Mail,Points\na@x.example,1\n');
    // A --map without "=" was an internal error.
    const map = await fails(['import', 'customers', '--account', account, '--file', path, '--map', 'Mail']);
    expect(map).toMatchObject({
      code: 'invalid_parameter',
      message: `--map must be 'Column in the file=import column', such as 'Points=points_balance', got "Mail"`,
      details: [{ field: 'map' }],
    });
    const missing = await fails(['import', 'customers', '--account', account, '--file', join(dir, 'gone.csv')]);
    expect(missing).toMatchObject({ code: 'invalid_parameter', details: [{ field: 'file' }] });
    expect(missing.message).toMatch(
      /^file cannot be read: there is no ".*" \(check the path, and the folder it is in\)$/,
    );
    expect(missing.message).not.toContain('ENOENT');
    const folder = await fails(['import', 'customers', '--account', account, '--file', dir]);
    expect(folder.message).toMatch(/^file cannot be read: ".*" is a folder: name a file in it$/);
  });
});

// Issue 49 points 4 and 5, through the real command: a stray quote crashed the reader (`internal_error`
// "Cannot access 'extraLines' before initialization", with --dry-run too), and a 200 MB line took
// the CLI to 1.35 GB. Each is now a refusal naming its line, the rest of the file imported.
describe('loyalty import customers with lines it cannot read', () => {
  it('refuses a stray quote by its line, with and without --dry-run', async () => {
    const path = file('q.csv', 'email,first_name\nqa1@x.example,a"b\n');
    const refused = {
      rows: 1,
      created: 0,
      updated: 0,
      unchanged: 0,
      refused: 1,
      refusals: [{ line: 2, message: expect.stringContaining('first_name has a quote (") inside a cell') }],
    };
    expect(await viaCli(path, '--dry-run')).toEqual(refused);
    expect(await viaCli(path)).toEqual(refused);
    expect(await emails()).toEqual([]);
  });

  it('reads on past a malformed line in the middle of the file', async () => {
    const path = file(
      'middle.csv',
      'email,first_name,points_balance\ngood1@x.example,One,5\nbad@x.example,"Un"closed,5\ngood2@x.example,Two,7\n',
    );
    const summary = await viaCli(path);
    expect(summary).toMatchObject({ rows: 3, created: 2, refused: 1, refusals: [{ line: 3 }] });
    expect(await emails()).toEqual(['good1@x.example', 'good2@x.example']);
  });

  it('refuses a line longer than the bound by its line and imports the next ones', async () => {
    const long = `long@x.example,${'x'.repeat(3 * MAX_ROW_BYTES)}`;
    const path = file('long.csv', ['email,first_name', 'before@x.example,B', long, 'after@x.example,A', ''].join('\n'));
    for (const extra of [['--dry-run'], []]) {
      expect(await viaCli(path, ...extra)).toEqual({
        rows: 3,
        created: 2,
        updated: 0,
        unchanged: 0,
        refused: 1,
        refusals: [
          {
            line: 3,
            message:
              'the row is longer than 1 MiB, the most a row may hold: look for a quote (") left open, which runs a ' +
              'cell on across the lines after it',
          },
        ],
      });
    }
    expect(await emails()).toEqual(['after@x.example', 'before@x.example']);
  });
});
