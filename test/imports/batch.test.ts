import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_BALANCE } from '../../src/points-transactions/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { unbalancedCustomers } from '../helpers/engine.js';

// An import applies a batch set by set (issue 32): a few statements for its rows, not a few per
// row. What each row leaves must be what the API's own writes would: balances through the ledger
// (its trigger), points earned beyond them, each customer placed once in the tier all of it gives
// (all-time and by period), and each row's events showing the customer as the import left them.
// A row only the database can refuse sends the batch row by row, the others still going in.

let t: TestApp;
let dir: string;

beforeEach(async () => {
  t = await createTestApp();
  dir = mkdtempSync(join(tmpdir(), 'loyalty-batch-'));
});
afterEach(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

const csv = (name: string, lines: string[]) => {
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
};

/** The account's events since `afterId`: type, and the customer or tier change they carry. */
async function eventsOf(accountId: number, afterId = 0) {
  const rows = await t.db.kysely
    .selectFrom('events')
    .select(['id', 'type', 'data'])
    .where('account_id', '=', accountId)
    .where('id', '>', afterId)
    .orderBy('id')
    .execute();
  return rows.map((row) => {
    const data = JSON.parse(row.data);
    return {
      id: Number(row.id),
      type: row.type,
      email: data.customer?.email ?? null,
      balance: data.customer?.points_balance ?? null,
      tier: data.customer?.vip_tier_id ?? null,
      change: data.vip_tier_change
        ? [data.vip_tier_change.previous_vip_tier?.id ?? null, data.vip_tier_change.current_vip_tier?.id ?? null]
        : null,
    };
  });
}

async function shop(type?: string) {
  const { id: accountId } = await t.services.accounts.create('Batch shop');
  if (type) await t.services.vipTiers.setProgramType(accountId, type);
  const tier = async (name: string, milestone: number) =>
    (await t.services.vipTiers.create(accountId, { name, milestone })).id;
  return {
    accountId,
    bronze: await tier('Bronze', 0),
    silver: await tier('Silver', 100),
    gold: await tier('Gold', 500),
  };
}

const lastEventId = async () =>
  Number(
    (
      await t.db.kysely
        .selectFrom('events')
        .select((eb) => eb.fn.max('id').as('id'))
        .executeTakeFirst()
    )?.id ?? 0,
  );

describe.each([
  ['all-time', undefined],
  ['rolling 12 months', 'rolling_12_months'],
])('a batch applied set by set (%s VIP program)', (_, type) => {
  it('leaves each customer, their ledger, tier and events as the rows say, placing each once', async () => {
    const { accountId, bronze, silver, gold } = await shop(type);
    const old = await t.services.customers.create(accountId, { email: 'old@batch.example', first_name: 'Old' });
    await t.services.pointsTransactions.adjust(accountId, { customer_id: old.id, points_change: 50 });
    const before = await lastEventId();

    const summary = await t.services.imports.importCustomers(
      accountId,
      csv('one-batch.csv', [
        'email,first_name,points_balance,points_earned,state,distinct_id',
        'new1@batch.example,New,120,600,,crm-1',
        'new2@batch.example,Two,,,candidate,',
        'OLD@batch.example,Olga,100,,,',
        'new3@batch.example,Three,10,,,',
      ]),
    );
    expect(summary).toEqual({ rows: 4, created: 3, updated: 1, unchanged: 0, refused: 0, refusals: [] });

    const shown = async (email: string) =>
      (await t.services.customers.list(accountId)).find((customer) => customer.email === email)!;
    const customer = async (email: string) => t.services.customers.get(accountId, (await shown(email)).id);
    expect(await customer('new1@batch.example')).toMatchObject({
      first_name: 'New',
      points_balance: 120,
      vip_tier_id: gold,
      vip_status: { progress_value: 600 },
    });
    expect(await customer('new2@batch.example')).toMatchObject({
      state: 'candidate',
      points_balance: 0,
      vip_tier_id: bronze,
    });
    expect(await customer('old@batch.example')).toMatchObject({
      first_name: 'Olga',
      points_balance: 150,
      vip_tier_id: silver,
      vip_status: { progress_value: 150 },
    });
    expect(await customer('new3@batch.example')).toMatchObject({ points_balance: 10, vip_tier_id: bronze });
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
    expect(
      (await t.services.customerIdentities.listIdentities(accountId)).map((identity) => [
        identity.distinct_id,
        identity.email,
      ]),
    ).toEqual([['crm-1', 'new1@batch.example']]);

    // Each customer placed once: one move each, from where they were to where the import left them.
    const moves = await t.db.kysely
      .selectFrom('vip_tier_changes')
      .innerJoin('customers', 'customers.id', 'vip_tier_changes.customer_id')
      .select(['customers.email', 'previous_vip_tier_id', 'current_vip_tier_id'])
      .where('vip_tier_changes.account_id', '=', accountId)
      .where('customers.email', '!=', 'old@batch.example')
      .orderBy('vip_tier_changes.id')
      .execute();
    expect(moves.map((m) => [m.email, m.previous_vip_tier_id, m.current_vip_tier_id].map(String))).toEqual(
      [
        ['new1@batch.example', null, gold],
        ['new2@batch.example', null, bronze],
        ['new3@batch.example', null, bronze],
      ].map((move) => move.map(String)),
    );

    // Each row's events in file order, every one showing the customer as the import left them.
    const events = (await eventsOf(accountId, before)).filter((event) => !event.type.startsWith('customer_identity'));
    expect(events.map(({ type, email, balance, tier, change }) => ({ type, email, balance, tier, change }))).toEqual([
      { type: 'customer.created', email: 'new1@batch.example', balance: 120, tier: gold, change: null },
      { type: 'points_transaction.created', email: 'new1@batch.example', balance: 120, tier: gold, change: null },
      { type: 'customer.vip_tier_changed', email: null, balance: null, tier: null, change: [null, gold] },
      { type: 'customer.created', email: 'new2@batch.example', balance: 0, tier: bronze, change: null },
      { type: 'customer.vip_tier_changed', email: null, balance: null, tier: null, change: [null, bronze] },
      { type: 'customer.updated', email: 'old@batch.example', balance: 150, tier: silver, change: null },
      { type: 'points_transaction.created', email: 'old@batch.example', balance: 150, tier: silver, change: null },
      { type: 'customer.vip_tier_changed', email: null, balance: null, tier: null, change: [bronze, silver] },
      { type: 'customer.created', email: 'new3@batch.example', balance: 10, tier: bronze, change: null },
      { type: 'points_transaction.created', email: 'new3@batch.example', balance: 10, tier: bronze, change: null },
      { type: 'customer.vip_tier_changed', email: null, balance: null, tier: null, change: [null, bronze] },
    ]);
  });
});

describe('a batch the database refuses a row of', () => {
  it('is applied row by row: that row refused in the file’s words (its points_balance), the others in, once', async () => {
    const { accountId, silver } = await shop();
    const full = await t.services.customers.create(accountId, { email: 'full@batch.example' });
    await t.services.pointsTransactions.adjust(accountId, { customer_id: full.id, points_change: MAX_BALANCE - 5 });
    const rows = Array.from({ length: 30 }, (_, i) => `c${i}@batch.example,${100 + i}`);
    const path = csv('refused.csv', [
      'email,points_balance',
      ...rows.slice(0, 10),
      'full@batch.example,6',
      ...rows.slice(10),
    ]);

    const summary = await t.services.imports.importCustomers(accountId, path);
    expect(summary).toMatchObject({ rows: 31, created: 30, updated: 0, refused: 1 });
    expect(summary.refusals).toEqual([
      {
        line: 12,
        message: `points_balance "6" would take customer ${full.id}'s points above ${MAX_BALANCE}, the most a balance holds`,
      },
    ]);
    expect((await t.services.customers.get(accountId, full.id)).points_balance).toBe(MAX_BALANCE - 5);
    const imported = await t.db.kysely
      .selectFrom('customers')
      .select(['points_balance', 'vip_tier_id'])
      .where('account_id', '=', accountId)
      .where('email', 'like', 'c%')
      .orderBy('id')
      .execute();
    expect(imported.map((c) => Number(c.points_balance))).toEqual(rows.map((_, i) => 100 + i));
    expect(imported.every((c) => Number(c.vip_tier_id) === silver)).toBe(true);
    const ledger = await t.db.kysely
      .selectFrom('points_transactions')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('account_id', '=', accountId)
      .where('description', '=', 'Imported balance')
      .executeTakeFirstOrThrow();
    expect(Number(ledger.n)).toBe(30);

    // Run again: nothing more, and the same row refused again.
    expect(await t.services.imports.importCustomers(accountId, path)).toMatchObject({
      created: 0,
      updated: 0,
      unchanged: 30,
      refused: 1,
    });
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  });
});
