import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliChecks, loyalty } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// `loyalty export customers` (issue 32): the import's columns, formulas neutralised, JSON Lines,
// the API's filters, and an export that imports into a fresh account as it is, with the same
// balances, points earned and tiers.

let dir: string;
let database: TestDatabase;
let env: Record<string, string>;
const { ok, fails } = cliChecks(() => env);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'loyalty-export-'));
  database = await createTestDatabase();
  env = { DATABASE_URL: database.url };
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await database.drop();
});

async function shop(name: string) {
  const account = String((await ok(['accounts', 'create', '--name', name])).id);
  await ok(['vip-tiers', 'create', '--account', account, '--name', 'Silver', '--milestone', '100']);
  await ok(['vip-tiers', 'create', '--account', account, '--name', 'Gold', '--milestone', '500']);
  return account;
}

/** Each customer's email, balance, points earned and tier name. */
async function standing(account: string) {
  const tiers = new Map(
    (await ok(['vip-tiers', 'list', '--account', account])).map((t: { id: number; name: string }) => [t.id, t.name]),
  );
  const list = await ok(['customers', 'list', '--account', account]);
  const shown = [];
  // One in-process command at a time.
  for (const c of list as { id: number }[]) shown.push(await ok(['customers', 'show', String(c.id)]));
  return shown
    .map((c) => ({
      email: c.email,
      first_name: c.first_name,
      state: c.state,
      balance: c.points_balance,
      earned: c.vip_status.progress_value,
      tier: tiers.get(c.vip_tier_id) ?? null,
    }))
    .sort((a, b) => a.email.localeCompare(b.email));
}

describe('loyalty export customers', () => {
  it('imports into a fresh account as it is: same balances, points earned and tiers', async () => {
    const from = await shop('Old shop');
    const source = join(dir, 'in.csv');
    writeFileSync(
      source,
      'email,first_name,state,points_balance,points_earned\n' +
        'jane@example.com,Jane,member,120,520\n' +
        'bob@example.com,"=cmd|\' /C calc\'!A0",member,0,150\n' +
        'cara@example.com,Cara,candidate,40,40\n' +
        'dan@example.com,-Dan,member,7,\n',
    );
    // Bob's and Dan's names are formulas: refused on the way in, so given by hand.
    expect(await ok(['import', 'customers', '--account', from, '--file', source])).toMatchObject({
      created: 2,
      refused: 2,
    });
    const bob = (
      await ok(['customers', 'create', '--account', from, '--email', 'bob@example.com', '--first-name', '=cmd'])
    ).id;
    await ok(['customers', 'create', '--account', from, '--email', 'dan@example.com', '--first-name', '+Dan']);
    expect(bob).toEqual(expect.any(Number));

    const out = join(dir, 'customers.csv');
    expect(await ok(['export', 'customers', '--account', from, '--output', out])).toEqual({ exported: 4, file: out });
    const text = readFileSync(out, 'utf8');
    const [header, ...lines] = text.trimEnd().split('\n');
    expect(header).toBe(
      'email,first_name,last_name,date_of_birth,state,points_balance,points_earned,id,vip_tier_id,referral_url,created_at',
    );
    expect(lines).toHaveLength(4);
    // Newest first, as the API lists them; formulas written as text.
    expect(lines[0]).toMatch(/^dan@example\.com,'\+Dan,/);
    expect(lines[1]).toMatch(/^bob@example\.com,'=cmd,/);

    const to = await shop('New shop');
    const moved = await ok(['import', 'customers', '--account', to, '--file', out]);
    // The neutralised names start with an apostrophe now, which imports as it is.
    expect(moved).toMatchObject({ rows: 4, created: 4, refused: 0 });
    const [before, after] = [await standing(from), await standing(to)];
    expect(after.map(({ first_name: _, ...rest }) => rest)).toEqual(before.map(({ first_name: _, ...rest }) => rest));
    expect(after.find((c) => c.email === 'jane@example.com')).toMatchObject({
      balance: 120,
      earned: 520,
      tier: 'Gold',
    });
  });

  it('writes JSON Lines to stdout, with the API’s filters, and refuses what the API refuses', async () => {
    const account = await shop('Lines');
    const source = join(dir, 'in.csv');
    writeFileSync(source, 'email,state,points_balance\na@example.com,member,5\nb@example.com,disabled,0\n');
    await ok(['import', 'customers', '--account', account, '--file', source]);
    const all = await loyalty(['export', 'customers', '--account', account, '--format', 'jsonl'], env);
    expect(all.code).toBe(0);
    const records = all.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(records.map((r) => [r.email, r.state, r.points_balance])).toEqual([
      ['b@example.com', 'disabled', 0],
      ['a@example.com', 'member', 5],
    ]);
    const members = await loyalty(
      ['export', 'customers', '--account', account, '--format', 'jsonl', '--state', 'member'],
      env,
    );
    expect(members.stdout.trimEnd().split('\n')).toHaveLength(1);
    const empty = await loyalty(['export', 'customers', '--account', account, '--email', 'nobody@example.com'], env);
    expect(empty.stdout).toBe(
      'email,first_name,last_name,date_of_birth,state,points_balance,points_earned,id,vip_tier_id,referral_url,created_at\n',
    );
    expect((await fails(['export', 'customers', '--account', account, '--format', 'xlsx'])).code).toBe(
      'invalid_parameter',
    );
    expect((await fails(['export', 'customers', '--account', account, '--state', 'gone'])).code).toBe(
      'invalid_parameter',
    );
    expect((await fails(['export', 'customers', '--account', account, '--updated-at-min', 'yesterday'])).code).toBe(
      'invalid_parameter',
    );
  });
});

// Issue 49 point 12: an export's refusals say the filter, what was wrong and what it accepts, the
// code and field the contract names unchanged; a file that cannot be written is one of them.
describe('loyalty export refusals, in words', () => {
  it('says what each filter accepts, with what was given, and refuses an --output it cannot write', async () => {
    const account = await shop('Words');
    const text = await loyalty(['export', 'customers', '--account', account, '--updated-at-min', 'yesterday'], env);
    expect(text.code).toBe(1);
    expect(text.stdout).toBe('');
    expect(text.stderr).toBe(
      'error: updated_at_min must be a time with its time zone (ISO 8601), such as 2026-01-31T00:00:00Z, ' +
        'got "yesterday"\n',
    );
    expect(await fails(['export', 'points-transactions', '--account', account, '--customer-id', '01'])).toMatchObject({
      code: 'invalid_parameter',
      message:
        'customer_id must be a customer id: a whole number from 1, written without leading zeros, such as 42, got "01"',
      details: [{ field: 'customer_id' }],
    });
    expect(await fails(['export', 'customers', '--account', account, '--state', 'gone'])).toMatchObject({
      message: 'state must be candidate, member or disabled, got "gone"',
    });
    expect(await fails(['export', 'customers', '--account', account, '--format', 'xlsx'])).toMatchObject({
      message: 'format must be csv or jsonl, got "xlsx"',
    });
    expect(await fails(['export', 'reward-fulfillments', '--account', account, '--code', ''])).toMatchObject({
      message: 'code must not be empty',
    });

    // A folder that is not there was an unhandled 'error' event: a crash with Node's stack.
    const missing = join(dir, 'no such folder', 'customers.csv');
    const unwritable = await loyalty(['export', 'customers', '--account', account, '--output', missing, '--json'], env);
    expect(unwritable.code).toBe(1);
    expect(JSON.parse(unwritable.stderr).error).toMatchObject({
      code: 'invalid_parameter',
      message: `output cannot be written: there is no "${missing.slice(0, 40)}…" (check the path, and the folder it is in)`,
      details: [{ field: 'output' }],
    });
    expect(await fails(['export', 'customers', '--account', account, '--output', dir])).toMatchObject({
      message: `output cannot be written: "${dir.length > 40 ? `${dir.slice(0, 40)}…` : dir}" is a folder: name a file in it`,
    });
  });
});
