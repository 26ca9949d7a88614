import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliChecks, loyalty, loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// The points engine's commands of the engine contract, with the --json forms scripts rely on.
describe('loyalty activity-types / vip-tiers / points-settings / customers set-state', () => {
  // The files the commands read; the database is the pass's (test/helpers/database.ts).
  let dir: string;
  let database: TestDatabase;
  let env: Record<string, string>;
  let account: string;

  const { ok, fails } = cliChecks(() => env);

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loyalty-cli-engine-'));
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
    account = String((await ok(['accounts', 'create', '--name', 'Acme'])).id);
  });
  afterEach(async () => {
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
  });

  it('creates and lists activity types, each with an activity_ token', async () => {
    const order = await ok(['activity-types', 'create', '--account', account, '--name', 'Place an order'], loyalty);
    expect(order).toEqual({
      id: expect.any(Number),
      name: 'Place an order',
      token: expect.stringMatching(/^activity_[0-9A-Za-z]{14,}$/),
    });
    const review = await ok(['activity-types', 'create', '--account', account, '--name', 'Write a review']);
    expect(review.token).not.toBe(order.token);
    expect(await ok(['activity-types', 'list', '--account', account])).toEqual([order, review]);
    expect((await fails(['activity-types', 'create', '--account', account, '--name', ''])).code).toBe(
      'invalid_parameter',
    );
    expect((await fails(['activity-types', 'list', '--account', '999'])).code).toBe('not_found');
  });

  it('binds earning rules to an activity type with "activity_token", shown by earning-rules list --json', async () => {
    const type = await ok(['activity-types', 'create', '--account', account, '--name', 'Order']);
    const file = join(dir, 'rules.json');
    const rule = (name: string, token?: unknown) => ({
      name,
      image_url: 'https://cdn.example.com/r.svg',
      reward: { type: 'points' },
      reward_value: { type: 'fixed', fixed: { value: 10 } },
      ...(token === undefined ? {} : { activity_token: token }),
    });
    writeFileSync(file, JSON.stringify([rule('bound', type.token), rule('unbound'), rule('null', null)]));
    const created = await ok(['earning-rules', 'create', '--account', account, '--file', file]);
    expect(created.map((r: { activity_token: unknown }) => r.activity_token)).toEqual([type.token, null, null]);
    const listed = await ok(['earning-rules', 'list', '--account', account]);
    expect(listed.map((r: { name: string; activity_token: unknown }) => [r.name, r.activity_token])).toEqual([
      ['null', null],
      ['unbound', null],
      ['bound', type.token],
    ]);
    writeFileSync(file, JSON.stringify([rule('fine', type.token), rule('bad', 'activity_unknown')]));
    const error = await fails(['earning-rules', 'create', '--account', account, '--file', file]);
    expect(error.details).toEqual([
      { field: 'earning_rules.1.activity_token', message: expect.stringMatching(/no activity type/) },
    ]);
    expect(await ok(['earning-rules', 'list', '--account', account])).toHaveLength(3); // all or nothing
  });

  it('creates, updates, lists and deletes VIP tiers as the API shows them', async () => {
    const gold = await ok(
      [
        'vip-tiers',
        'create',
        '--account',
        account,
        '--name',
        'Gold',
        '--milestone',
        '500',
        '--image-url',
        'https://cdn.example.com/gold.svg',
        '--perk',
        'Free shipping',
        '--perk',
        'Early access',
      ],
      loyalty,
    );
    expect(gold).toEqual({
      id: expect.any(Number),
      name: 'Gold',
      image_url: 'https://cdn.example.com/gold.svg',
      milestone: 500,
      perks: [{ name: 'Free shipping' }, { name: 'Early access' }],
      entry_rewards: [],
    });
    const silver = await ok(['vip-tiers', 'create', '--account', account, '--name', 'Silver', '--milestone', '100']);
    expect(silver).toMatchObject({ image_url: '', perks: [] });
    expect((await ok(['vip-tiers', 'list', '--account', account])).map((t: { name: string }) => t.name)).toEqual([
      'Silver',
      'Gold',
    ]);
    const taken = await fails(['vip-tiers', 'create', '--account', account, '--name', 'Also', '--milestone', '100']);
    expect(taken).toMatchObject({ code: 'invalid_parameter', details: [{ field: 'vip_tier.milestone' }] });
    expect((await fails(['vip-tiers', 'update', String(silver.id), '--milestone', '500'])).code).toBe(
      'invalid_parameter',
    );
    for (const bad of ['-1', '1.5', 'many', '1000000000000000001']) {
      const error = await fails(['vip-tiers', 'create', '--account', account, '--name', 'X', '--milestone', bad]);
      expect(error.details[0].field).toBe('vip_tier.milestone');
    }
    expect(await ok(['vip-tiers', 'update', String(silver.id), '--milestone', '50', '--name', 'Bronze'])).toMatchObject(
      {
        name: 'Bronze',
        milestone: 50,
      },
    );
    expect(await ok(['vip-tiers', 'delete', String(gold.id)])).toEqual({ deleted: true });
    expect((await fails(['vip-tiers', 'delete', String(gold.id)])).code).toBe('not_found');
    expect(await ok(['vip-tiers', 'list', '--account', account])).toHaveLength(1);

    // Without --json, a change that places customers tells its progress on stderr.
    await ok(['customers', 'create', '--account', account, '--email', 'jo@example.com']);
    const text = await loyaltyInProcess(['vip-tiers', 'update', String(silver.id), '--milestone', '0'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(`VIP tier ${silver.id} updated: Bronze from 0 points\n`);
    expect(text.stderr).toBe('\rplacing customers again: 1 placed, 1 moved to another tier\n');
  });

  it('sets the points settings and sets customer states', async () => {
    expect(await ok(['points-settings', 'show', '--account', account])).toEqual({
      points_label: { one: 'Point', other: 'Points' },
      points_expiry: null,
    });
    expect(await ok(['points-settings', 'set', '--account', account, '--one', 'Coin', '--other', 'Coins'])).toEqual({
      points_label: { one: 'Coin', other: 'Coins' },
      points_expiry: null,
    });
    // The expiry alone, then never again; the labels stay.
    expect(await ok(['points-settings', 'set', '--account', account, '--expiry-days', '365'])).toEqual({
      points_label: { one: 'Coin', other: 'Coins' },
      points_expiry: { inactivity_days: 365 },
    });
    const tooShort = await fails(['points-settings', 'set', '--account', account, '--expiry-days', '7']);
    expect(tooShort.code).toBe('invalid_parameter');
    expect(tooShort.details).toContainEqual({
      field: 'points_settings.points_expiry.inactivity_days',
      message: 'must be >= 30',
    });
    expect(
      (await ok(['points-settings', 'set', '--account', account, '--expiry-days', 'never'])).points_expiry,
    ).toBeNull();
    const error = await fails(['points-settings', 'set', '--account', account, '--one', '', '--other', 'x'.repeat(65)]);
    expect(error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'points_settings.points_label.one',
      'points_settings.points_label.other',
    ]);

    const jane = await ok(['customers', 'create', '--account', account, '--email', 'jane@example.com']);
    const disabled = await ok(['customers', 'set-state', String(jane.id), '--state', 'disabled'], loyalty);
    expect(disabled).toMatchObject({
      id: jane.id,
      state: 'disabled',
      points_balance: 0,
      vip_status: { vip_tier_id: null },
    });
    expect((await ok(['customers', 'show', String(jane.id)])).state).toBe('disabled');
    expect((await fails(['customers', 'set-state', String(jane.id), '--state', 'vip'])).code).toBe('invalid_parameter');
    expect((await fails(['customers', 'set-state', '999', '--state', 'member'])).code).toBe('not_found');
  });

  it('creates, lists, disables and enables points products as the API shows them', async () => {
    const file = join(dir, 'products.json');
    writeFileSync(
      file,
      JSON.stringify([
        {
          exchange_type: 'fixed',
          points_price: 500,
          reward: { name: '$5 off', image_url: 'https://cdn.example.com/5.png' },
        },
        {
          exchange_type: 'variable',
          variable_points_step: 100,
          variable_points_step_reward_value: 1,
          variable_points_min: 100,
          variable_points_max: 2000,
          reward: { name: '$1 per 100' },
          enabled: false,
        },
      ]),
    );
    const created = await ok(['points-products', 'create', '--account', account, '--file', file], loyalty);
    expect(created).toMatchObject([
      {
        exchange_type: 'fixed',
        exchange_description: '500 Points',
        points_price: 500,
        enabled: true,
        reward: { name: '$5 off' },
      },
      {
        exchange_type: 'variable',
        variable_points_min: 100,
        enabled: false,
        reward: { name: '$1 per 100', image_url: '' },
      },
    ]);
    expect((await ok(['points-products', 'list', '--account', account])).map((p: { id: number }) => p.id)).toEqual([
      created[1].id,
      created[0].id,
    ]);
    expect(await ok(['points-products', 'enable', String(created[1].id)])).toMatchObject({ enabled: true });
    expect(await ok(['points-products', 'disable', String(created[0].id)])).toMatchObject({ enabled: false });
    expect((await fails(['points-products', 'disable', '999'])).code).toBe('not_found');
    // All or nothing, each refusal naming its field.
    writeFileSync(
      file,
      JSON.stringify([
        { exchange_type: 'fixed', points_price: 0, reward: { name: 'free' } },
        {
          exchange_type: 'variable',
          variable_points_step: 100,
          variable_points_step_reward_value: 1,
          variable_points_min: 150,
          variable_points_max: 300,
          reward: { name: 'x' },
        },
      ]),
    );
    const error = await fails(['points-products', 'create', '--account', account, '--file', file]);
    expect(error.details[0].field).toBe('points_products.0.points_price');
    writeFileSync(
      file,
      JSON.stringify({
        exchange_type: 'variable',
        variable_points_step: 100,
        variable_points_step_reward_value: 1,
        variable_points_min: 150,
        variable_points_max: 300,
        reward: { name: 'x' },
      }),
    );
    expect((await fails(['points-products', 'create', '--account', account, '--file', file])).details[0].field).toBe(
      'points_product.variable_points_min',
    );
    writeFileSync(
      file,
      JSON.stringify({ exchange_type: 'fixed', points_price: 5, variable_points_step: 1, reward: { name: 'x' } }),
    );
    expect((await fails(['points-products', 'create', '--account', account, '--file', file])).code).toBe(
      'invalid_parameter',
    );
    expect(await ok(['points-products', 'list', '--account', account])).toHaveLength(2);
  });

  it('demo sets up a program whose printed activity earns points', async () => {
    const demo = await ok(['demo']);
    expect(demo).toMatchObject({
      account_id: expect.any(Number),
      activity_token: expect.stringMatching(/^activity_/),
      customer_id: expect.any(Number),
      points_product_id: expect.any(Number),
    });
    const text = await loyaltyInProcess(['demo'], env);
    expect(text.stdout).toContain('/activities');
    expect(text.stdout).toContain('"amount":"125.50"');
    expect(text.stdout).toMatch(/points_products\/\d+\/purchase/);
    expect(text.stdout).toContain('/reward_fulfillments?customer_id=');
    const tiers = await ok(['vip-tiers', 'list', '--account', String(demo.account_id)]);
    expect(tiers.length).toBeGreaterThan(0);
    const rules = await ok(['earning-rules', 'list', '--account', String(demo.account_id)]);
    expect(rules.some((r: { activity_token: unknown }) => r.activity_token === demo.activity_token)).toBe(true);
  });
});
