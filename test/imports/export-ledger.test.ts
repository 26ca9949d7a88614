import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Activity, ActivityInput } from '../../src/activities/schemas.js';
import { DomainError } from '../../src/errors.js';
import { ExportsService } from '../../src/exports/service.js';
import type { PointsProduct } from '../../src/points-products/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { cliChecks, loyalty } from '../helpers/cli.js';
import { expectError } from '../helpers/contract.js';
import { fixedRule, program } from '../helpers/engine.js';

// `loyalty export points-transactions|reward-fulfillments|activities` (issue 32): each holds what
// the API's list answers for the same filters (activities, which have no list, what recording them
// answered), as CSV and JSON Lines, with formulas neutralised in CSV; a bad filter is refused as
// the API refuses it, before anything is written; and the export is one snapshot, whatever is
// written while it runs.

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

let t: TestApp;
let a: Tenant;
let jane: number;
let bob: number;
/** The activities recorded for `a`, as the API answered them, oldest first. */
let activities: Activity[];
/** The time between the first records and the later ones: an `updated_at_min` that splits them. */
let midway: string;
/** A product without expiry, for purchases while an export runs. */
let lasting: PointsProduct;
let dir: string;

const COLUMNS = {
  'points-transactions':
    'id,customer_id,points_change,description,internal_note,activity_id,points_purchase_id,created_at,updated_at',
  'reward-fulfillments':
    'id,name,code,customer_id,fulfillment_status,image_url,action_text,action_url,usage_instructions,' +
    'terms_and_conditions,expires_at,usage_status,used_at,created_at,updated_at',
  activities: 'id,customer_id,token,distinct_id,properties,created_on_origin_at,created_at,updated_at',
};
type Kind = keyof typeof COLUMNS;

/** The API's list path of each kind that has one, and the key of its records. */
const LISTS = {
  'points-transactions': { path: '/v1/points_transactions', key: 'points_transactions' },
  'reward-fulfillments': { path: '/v1/reward_fulfillments', key: 'reward_fulfillments' },
};

const get = (url: string, key = a.apiKey) => t.app.inject({ method: 'GET', url, headers: bearer(key) });

/** Every record the API's list answers for `filters`, newest first (one page holds them all here). */
async function listed(kind: keyof typeof LISTS, filters: Record<string, string> = {}): Promise<object[]> {
  const { path, key } = LISTS[kind];
  const reply = await get(`${path}?${new URLSearchParams({ ...filters, limit: '250' })}`);
  expect(reply.statusCode).toBe(200);
  const body = reply.json();
  expect(body.metadata.next_cursor).toBe('');
  return body[key];
}

/** What recording the activities answered, without their credits, newest first. */
function recorded(keep: (activity: Activity) => boolean = () => true): object[] {
  return activities
    .filter(keep)
    .map(({ points_transactions: _, ...activity }) => activity)
    .reverse();
}

/** An exporter reading `pageSize` records a statement, so that a few records make several pages. */
function exporter(pageSize = 2): ExportsService {
  const s = t.services;
  return new ExportsService(
    t.db,
    t.clock,
    s.accounts,
    s.customers,
    s.pointsTransactions,
    s.rewardFulfillments,
    s.activities,
    pageSize,
  );
}

interface Exported {
  count: number;
  text: string;
  /** The texts handed to the sink, in order. */
  writes: string[];
}

/** An export of `a`'s records into memory; `between` runs at the first write, before the second page is read. */
async function exported(
  kind: string,
  format: string,
  filters: Record<string, string | undefined> = {},
  options: { service?: ExportsService; between?: () => Promise<void> } = {},
): Promise<Exported> {
  const writes: string[] = [];
  const count = await (options.service ?? exporter()).export(kind, a.accountId, format, filters, async (text) => {
    writes.push(text);
    if (writes.length === 1) await options.between?.();
  });
  return { count, text: writes.join(''), writes };
}

/** An export of all of `a`'s records of `kind` while `write` runs: at its first write, before its second page is read. */
const exportedWhile = (kind: Kind, format: string, write: () => Promise<void>) =>
  exported(kind, format, {}, { between: write });

/** The records of JSON Lines. */
const lines = (text: string) =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));

/** A record's CSV cells as the export writes them: null empty, objects as JSON, formulas behind an apostrophe. */
function cells(record: object, columns: string): string[] {
  return columns.split(',').map((column) => {
    const value = (record as Record<string, unknown>)[column];
    if (value === null) return '';
    if (typeof value === 'object') return JSON.stringify(value);
    const text = String(value);
    return typeof value === 'string' && /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  });
}

/** Both formats of the export of `kind` hold `expected`: JSON Lines the same objects, CSV their cells under the header. */
async function expectExport(kind: Kind, filters: Record<string, string>, expected: object[]): Promise<void> {
  const jsonl = await exported(kind, 'jsonl', filters);
  expect(lines(jsonl.text)).toEqual(expected);
  expect(jsonl.count).toBe(expected.length);
  const csv = await exported(kind, 'csv', filters);
  expect(csv.count).toBe(expected.length);
  const [header, ...rows] = parse(csv.text) as string[][];
  expect(header!.join(',')).toBe(COLUMNS[kind]);
  expect(rows).toEqual(expected.map((record) => cells(record, COLUMNS[kind])));
}

async function seed(): Promise<void> {
  const s = t.services;
  a = await createTenant(s);
  jane = (await s.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  bob = (await s.customers.create(a.accountId, { email: 'bob@example.com' })).id;
  const { token } = await program(s, a.accountId, (made) => [fixedRule('Place an order', 10, made)]);
  const record = async (input: Omit<ActivityInput, 'token'>) =>
    (await s.activities.record(a.accountId, { token, ...input })).activity;
  activities = [
    await record({ customer_id: jane, distinct_id: '=HYPERLINK("http://x")', properties: { amount: 5, note: '=1+1' } }),
    await record({ customer_id: bob, distinct_id: 'order-2', properties: {} }),
  ];
  await s.pointsTransactions.adjust(a.accountId, {
    customer_id: jane,
    points_change: 500,
    description: '=SUM(A1:A3)',
    internal_note: '@admin',
  });
  await s.pointsTransactions.adjust(a.accountId, {
    customer_id: bob,
    points_change: 300,
    description: '-5, corrected',
  });

  const [expiring, free] = (await s.pointsProducts.create(a.accountId, [
    { exchange_type: 'fixed', points_price: 100, expires_after_days: 1, reward: { name: '+$5 off' } },
    { exchange_type: 'fixed', points_price: 50, reward: { name: 'Free shipping' } },
  ])) as PointsProduct[];
  lasting = free!;
  const buy = async (product: PointsProduct, customer: number) =>
    (await s.pointsProducts.purchase(a.accountId, product.id, { customer_id: customer })).reward_fulfillment;
  // The oldest a code that can still be used: a write while an export runs reaches its last page.
  await buy(lasting, bob);
  const used = await buy(expiring!, jane);
  const cancelled = await buy(expiring!, jane);
  await buy(expiring!, jane);
  await s.rewardFulfillments.use(a.accountId, used.id);
  await s.rewardFulfillments.cancel(a.accountId, cancelled.id);

  // Later: the unused expiring code is past its expiry now.
  t.clock.advance(2 * DAY_MS);
  midway = new Date(t.clock.now() - HOUR_MS).toISOString();
  activities.push(
    await record({ customer_id: jane, distinct_id: 'order-3', created_on_origin_at: '2026-01-02T10:00:00+02:00' }),
  );
  await buy(lasting, jane);

  // Another account's records are never in `a`'s exports.
  const other = await createTenant(s, 'Other shop');
  const stranger = (await s.customers.create(other.accountId, { email: 'stranger@example.com' })).id;
  await s.pointsTransactions.adjust(other.accountId, { customer_id: stranger, points_change: 9 });
  const theirs = await program(s, other.accountId, () => []);
  await s.activities.record(other.accountId, { token: theirs.token, customer_id: stranger });
}

beforeEach(async () => {
  t = await createTestApp();
  dir = mkdtempSync(join(tmpdir(), 'loyalty-export-'));
  await seed();
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await t.close();
});

describe('export points-transactions', () => {
  it('holds what the API lists for the same filters, newest first, in CSV and JSON Lines', async () => {
    const all = await listed('points-transactions');
    // 3 credits of activities, 2 adjustments, 5 purchases' debits, a cancelled one's refund.
    expect(all).toHaveLength(11);
    await expectExport('points-transactions', {}, all);
    const cases: Record<string, string>[] = [
      { customer_id: String(jane) },
      { updated_at_min: midway },
      { customer_id: String(bob), updated_at_min: midway },
    ];
    for (const filters of cases) {
      await expectExport('points-transactions', filters, await listed('points-transactions', filters));
    }
    expect(await listed('points-transactions', { customer_id: String(bob), updated_at_min: midway })).toEqual([]);
  });

  it('writes formulas as text in CSV, and as they are in JSON Lines', async () => {
    const csv = (await exported('points-transactions', 'csv', { customer_id: String(jane) })).text;
    expect(csv).toContain(`,'=SUM(A1:A3),'@admin,`);
    const bobs = await exported('points-transactions', 'csv', { customer_id: String(bob) });
    expect(bobs.text).toContain(`,300,"'-5, corrected",`);
    // A negative number is a number, not a formula.
    expect(bobs.text).toMatch(/,-50,/);
    const jsonl = lines((await exported('points-transactions', 'jsonl', { customer_id: String(jane) })).text);
    expect(jsonl.map((r) => r.description)).toContain('=SUM(A1:A3)');
  });
});

describe('export reward-fulfillments', () => {
  it('holds what the API lists for the same filters, newest first, in CSV and JSON Lines', async () => {
    const all = await listed('reward-fulfillments');
    expect(all).toHaveLength(5);
    await expectExport('reward-fulfillments', {}, all);
    const code = (all[2] as { code: string }).code;
    const dashed = `${code.slice(0, 4)}-${code.slice(4, 8)} ${code.slice(8)}`.toLowerCase();
    const cases: Record<string, string>[] = [
      { customer_id: String(bob) },
      { fulfillment_status: 'cancelled' },
      { usage_status: 'used' },
      { usage_status: 'unused' },
      { usage_status: 'expired' },
      { code: dashed },
      { updated_at_min: midway },
      { customer_id: String(jane), usage_status: 'unused', fulfillment_status: 'issued' },
    ];
    for (const filters of cases) {
      const expected = await listed('reward-fulfillments', filters);
      expect(expected.length, JSON.stringify(filters)).toBeGreaterThan(0);
      await expectExport('reward-fulfillments', filters, expected);
    }
    const names = (await exported('reward-fulfillments', 'csv', { usage_status: 'expired' })).text;
    expect(names).toContain(`,'+$5 off,`);
  });
});

describe('export activities', () => {
  it('holds the activities as recording them answered, newest first, with their properties as JSON', async () => {
    await expectExport('activities', {}, recorded());
    await expectExport(
      'activities',
      { customer_id: String(jane) },
      recorded((r) => r.customer_id === jane),
    );
    await expectExport(
      'activities',
      { updated_at_min: midway },
      recorded((r) => r.distinct_id === 'order-3'),
    );
    await expectExport('activities', { customer_id: String(bob), updated_at_min: midway }, []);

    const [header, ...rows] = parse((await exported('activities', 'csv')).text) as string[][];
    const [, , oldest] = rows;
    expect(header).toEqual(COLUMNS.activities.split(','));
    expect(oldest![3]).toBe(`'=HYPERLINK("http://x")`);
    // A property holding a formula stays inside its JSON text, which no spreadsheet runs.
    expect(JSON.parse(oldest![4]!)).toEqual({ amount: 5, note: '=1+1' });
    expect(rows[0]![5]).toBe('2026-01-02T08:00:00.000Z');
  });
});

describe('export (every kind)', () => {
  it('writes the header alone when nothing matches, and a thousand records a statement by default', async () => {
    for (const kind of ['points-transactions', 'reward-fulfillments', 'activities'] as const) {
      const none = await exported(kind, 'csv', { customer_id: '999999' });
      expect(none).toEqual({ count: 0, text: `${COLUMNS[kind]}\n`, writes: [`${COLUMNS[kind]}\n`] });
      expect(await exported(kind, 'jsonl', { customer_id: '999999' })).toEqual({ count: 0, text: '', writes: [''] });
      const whole = await exported(kind, 'jsonl', {}, { service: t.services.exports });
      expect(whole.writes).toHaveLength(1);
      expect(whole.text).toBe((await exported(kind, 'jsonl')).text);
    }
    // Several pages of 2: one write each, the header only in the first.
    const paged = await exported('points-transactions', 'csv');
    expect(paged.writes).toHaveLength(6);
    expect(paged.writes.filter((text) => text.startsWith('id,'))).toHaveLength(1);
    // A download is named by the service's clock (the test's, in January 2026), not the machine's.
    const today = new Date(t.clock.now()).toISOString().slice(0, 10);
    expect(t.services.exports.fileName('reward-fulfillments', 'jsonl')).toBe(`reward-fulfillments-${today}.jsonl`);
  });

  it('refuses an unknown kind, format or filter and a value the API refuses, before writing anything', async () => {
    const cases: [string, Record<string, string>, string, string | null][] = [
      ['points-transactions', { customer_id: 'abc' }, 'customer_id', '/v1/points_transactions?customer_id=abc'],
      ['points-transactions', { customer_id: '01' }, 'customer_id', '/v1/points_transactions?customer_id=01'],
      ['points-transactions', { customer_id: '0' }, 'customer_id', '/v1/points_transactions?customer_id=0'],
      ['points-transactions', { updated_at_min: 'yesterday' }, 'updated_at_min', null],
      ['points-transactions', { updated_at_min: '2026-01-01' }, 'updated_at_min', null],
      ['points-transactions', { state: 'member' }, 'state', '/v1/points_transactions?state=member'],
      ['reward-fulfillments', { customer_id: '1.5' }, 'customer_id', '/v1/reward_fulfillments?customer_id=1.5'],
      ['reward-fulfillments', { fulfillment_status: 'gone' }, 'fulfillment_status', null],
      ['reward-fulfillments', { usage_status: 'spent' }, 'usage_status', '/v1/reward_fulfillments?usage_status=spent'],
      ['reward-fulfillments', { code: '' }, 'code', '/v1/reward_fulfillments?code='],
      ['reward-fulfillments', { email: 'jane@example.com' }, 'email', null],
      ['activities', { customer_id: '-3' }, 'customer_id', null],
      ['activities', { updated_at_min: '2026-02-30T00:00:00Z' }, 'updated_at_min', null],
      ['activities', { code: 'X' }, 'code', null],
      ['customers', { customer_id: '1' }, 'customer_id', '/v1/customers?customer_id=1'],
      ['customers', { state: 'gone' }, 'state', '/v1/customers?state=gone'],
    ];
    for (const [kind, filters, field, api] of cases) {
      const writes: string[] = [];
      const refused = await exporter()
        .export(kind, a.accountId, 'csv', filters, async (text) => {
          writes.push(text);
        })
        .catch((error: unknown) => error);
      expect(refused, `${kind} ${JSON.stringify(filters)}`).toBeInstanceOf(DomainError);
      expect(refused).toMatchObject({ code: 'invalid_parameter', details: [{ field }] });
      expect(writes).toEqual([]);
      if (api) expectError(await get(api), 'invalid_parameter');
    }
    for (const [kind, format, field] of [
      ['ledger', 'csv', 'kind'],
      ['activities', 'xlsx', 'format'],
    ] as const) {
      await expect(exported(kind, format)).rejects.toMatchObject({ code: 'invalid_parameter', details: [{ field }] });
    }
    // The API's own time checks: a date without a time is refused there too.
    expectError(await get('/v1/points_transactions?updated_at_min=2026-01-01'), 'invalid_parameter');
  });
});

// What is written while an export runs, between its pages of 2 records, is not in it.
describe('export reads one snapshot', () => {
  it('of the points ledger', async () => {
    const ledger = await listed('points-transactions');
    const oldest = (ledger.at(-1) as { id: number }).id;
    const during = await exportedWhile('points-transactions', 'jsonl', async () => {
      await t.services.pointsTransactions.adjust(a.accountId, { customer_id: bob, points_change: 1 });
      // The ledger never changes a row; this stands for any write the later pages would see
      // (on PostgreSQL, a transaction with a lower id that commits late).
      await t.db.kysely
        .updateTable('points_transactions')
        .set({ description: 'changed' })
        .where('id', '=', oldest)
        .execute();
    });
    expect(during.writes.length).toBeGreaterThan(1);
    expect(lines(during.text)).toEqual(ledger);
    const after = await listed('points-transactions');
    expect(after).toHaveLength(ledger.length + 1);
    expect(after.at(-1)).toMatchObject({ id: oldest, description: 'changed' });
  });

  it('of reward fulfillments', async () => {
    const fulfillments = await listed('reward-fulfillments');
    const oldest = fulfillments.at(-1) as { id: number };
    expect(oldest).toMatchObject({ fulfillment_status: 'issued', usage_status: 'unused' });
    const during = await exportedWhile('reward-fulfillments', 'csv', async () => {
      await t.services.rewardFulfillments.use(a.accountId, oldest.id);
      await t.services.pointsProducts.purchase(a.accountId, lasting.id, { customer_id: bob });
    });
    const [, ...rows] = parse(during.text) as string[][];
    expect(rows).toEqual(fulfillments.map((record) => cells(record, COLUMNS['reward-fulfillments'])));
    expect(await listed('reward-fulfillments')).toHaveLength(fulfillments.length + 1);
    expect(await t.services.rewardFulfillments.get(a.accountId, oldest.id)).toMatchObject({ usage_status: 'used' });
  });

  it('of activities', async () => {
    const [oldest] = activities;
    const during = await exportedWhile('activities', 'jsonl', async () => {
      await t.services.activities.record(a.accountId, { token: oldest!.token, customer_id: bob });
      await t.db.kysely
        .updateTable('activities')
        .set({ properties: '{"changed":true}' })
        .where('id', '=', oldest!.id)
        .execute();
    });
    expect(during.writes.length).toBeGreaterThan(1);
    expect(lines(during.text)).toEqual(recorded());
    const now = lines((await exported('activities', 'jsonl')).text);
    expect(now).toHaveLength(activities.length + 1);
    expect(now.at(-1)).toMatchObject({ id: oldest!.id, properties: { changed: true } });
  });
});

describe('loyalty export, end to end', () => {
  it('writes a file (a line, or {"exported", "file"}) or stdout, and refuses a bad filter', async () => {
    const env = { DATABASE_URL: t.url };
    const { ok, fails } = cliChecks(() => env);
    const account = String(a.accountId);
    const file = join(dir, 'ledger.csv');
    expect(
      await ok([
        'export',
        'points-transactions',
        '--account',
        account,
        '--customer-id',
        String(jane),
        '--output',
        file,
      ]),
    ).toEqual({ exported: 8, file });
    expect(readFileSync(file, 'utf8')).toBe(
      (await exported('points-transactions', 'csv', { customer_id: String(jane) })).text,
    );

    // The real command: JSON Lines to stdout, with a filter.
    const stdout = await loyalty(
      ['export', 'activities', '--account', account, '--format', 'jsonl', '--updated-at-min', midway],
      env,
    );
    expect(stdout.code).toBe(0);
    expect(lines(stdout.stdout)).toEqual(recorded((r) => r.distinct_id === 'order-3'));
    const unused = await listed('reward-fulfillments', { usage_status: 'unused' });
    const saved = join(dir, 'fulfillments.jsonl');
    const text = await loyalty(
      [
        'export',
        'reward-fulfillments',
        '--account',
        account,
        '--format',
        'jsonl',
        '--usage-status',
        'unused',
        '--output',
        saved,
      ],
      env,
    );
    expect(text.stdout).toBe(`exported ${unused.length} reward fulfillments to ${saved}\n`);
    expect(lines(readFileSync(saved, 'utf8'))).toEqual(unused);

    expect(
      (await fails(['export', 'reward-fulfillments', '--account', account, '--fulfillment-status', 'gone'])).code,
    ).toBe('invalid_parameter');
    expect((await fails(['export', 'activities', '--account', account, '--customer-id', 'jane'])).code).toBe(
      'invalid_parameter',
    );
    // A refused filter writes no file at all, not an empty one.
    const refusedFile = join(dir, 'refused.csv');
    expect(
      (await fails(['export', 'customers', '--account', account, '--state', 'gone', '--output', refusedFile])).code,
    ).toBe('invalid_parameter');
    expect(existsSync(refusedFile)).toBe(false);
  });
});
