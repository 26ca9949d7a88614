import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PointsProduct } from '../../src/points-products/schemas.js';
import { cliChecks, loyalty } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { withServices } from '../helpers/seed.js';

// `loyalty reward-fulfillments list | use | cancel`: a code found at the till, used once, or
// cancelled once with its points given back; refusals as the API's errors.
describe('loyalty reward-fulfillments', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let account: string;
  let jane: number;
  let codes: { id: number; code: string }[];

  const { ok, fails } = cliChecks(() => env);
  const balance = () =>
    withServices(
      database.url,
      async (services) => (await services.customers.get(Number(account), jane)).points_balance,
    );

  beforeEach(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
    account = String((await ok(['accounts', 'create', '--name', 'Acme'])).id);
    ({ jane, codes } = await withServices(database.url, async (services) => {
      const accountId = Number(account);
      const customer = (await services.customers.create(accountId, { email: 'jane@example.com' })).id;
      await services.pointsTransactions.adjust(accountId, { customer_id: customer, points_change: 300 });
      const product = (await services.pointsProducts.create(accountId, {
        exchange_type: 'fixed',
        points_price: 100,
        reward: { name: '$5 off' },
      })) as PointsProduct;
      const bought = [];
      for (let i = 0; i < 2; i++) {
        bought.push(
          (await services.pointsProducts.purchase(accountId, product.id, { customer_id: customer })).reward_fulfillment,
        );
      }
      return { jane: customer, codes: bought.map((f) => ({ id: f.id, code: f.code })) };
    }));
  });
  afterEach(async () => database.drop());

  it('finds a code, uses it once, cancels the other once with its points back', async () => {
    const [first, second] = codes as [{ id: number; code: string }, { id: number; code: string }];
    const typed = first.code.toLowerCase().replace(/(.{4})(?!$)/g, '$1-');
    const found = await ok(['reward-fulfillments', 'list', '--account', account, '--code', typed], loyalty);
    expect(found.map((f: { id: number }) => f.id)).toEqual([first.id]);
    const all = await ok(['reward-fulfillments', 'list', '--account', account]);
    expect(all.map((f: { id: number }) => f.id)).toEqual([second.id, first.id]);

    const used = await ok(['reward-fulfillments', 'use', String(first.id), '--account', account]);
    expect(used).toMatchObject({ id: first.id, usage_status: 'used' });
    expect((await fails(['reward-fulfillments', 'use', String(first.id), '--account', account])).code).toBe(
      'reward_already_used',
    );
    expect(await balance()).toBe(100);
    const cancelled = await ok(['reward-fulfillments', 'cancel', String(second.id), '--account', account]);
    expect(cancelled).toMatchObject({ id: second.id, fulfillment_status: 'cancelled' });
    expect(await balance()).toBe(200);
    expect((await fails(['reward-fulfillments', 'cancel', String(second.id), '--account', account])).code).toBe(
      'reward_already_used',
    );
    expect((await fails(['reward-fulfillments', 'use', String(second.id), '--account', account])).code).toBe(
      'reward_cancelled',
    );
    expect(await balance()).toBe(200);
  });

  it("refuses another account's id, a bad --used-at and a bad --limit by name", async () => {
    const other = String((await ok(['accounts', 'create', '--name', 'Other'])).id);
    const id = String(codes[0]!.id);
    expect((await fails(['reward-fulfillments', 'use', id, '--account', other])).code).toBe('not_found');
    const bad = await fails(['reward-fulfillments', 'use', id, '--account', account, '--used-at', 'soon']);
    expect(bad).toMatchObject({ code: 'invalid_parameter', details: [{ field: 'used_at' }] });
    const limit = await fails(['reward-fulfillments', 'list', '--account', account, '--limit', '0']);
    expect(limit).toMatchObject({ code: 'invalid_parameter', details: [{ field: 'limit' }] });
    expect(await balance()).toBe(100);
  });
});
