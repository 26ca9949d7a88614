import { InsertQueryNode, sql, ValuesNode } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRules, type NewRule } from '../../src/earning-rules/repository.js';
import type { StoredEarningRule } from '../../src/earning-rules/schemas.js';
import { DomainError } from '../../src/errors.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

const valid = {
  name: 'Place an order',
  image_url: 'https://cdn.example/order.svg',
  reward: { type: 'points' },
  reward_value: { type: 'variable', variable: { value: 5, per_amount: 1 } },
  earning_limit: { max: 3, type: 'rolling', rolling: { unit: 'week', unit_count: 2 } },
};

/** The error `create` throws for `input`. */
async function refusal(t: TestApp, accountId: number, input: unknown): Promise<DomainError> {
  const error = await t.services.earningRules.create(accountId, input).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

describe('EarningRulesService.create', () => {
  let t: TestApp;
  let accountId: number;
  beforeAll(async () => {
    t = await createTestApp();
    accountId = (await t.services.accounts.create('Rules')).id;
  });
  afterAll(async () => t.close());

  it('creates one rule from an object, with defaults, enabled', async () => {
    const rule = (await t.services.earningRules.create(accountId, valid)) as StoredEarningRule;
    expect(rule).toEqual({
      id: expect.any(Number),
      name: 'Place an order',
      image_url: 'https://cdn.example/order.svg',
      action_text: null,
      action_url: null,
      restricted_to_vip_tier_ids: [],
      reward: { type: 'points' },
      reward_value: { type: 'variable', variable: { value: 5, per_amount: 1 } },
      earning_limit: { max: 3, type: 'rolling', rolling: { unit: 'week', unit_count: 2 } },
      enabled: true,
      activity_token: null,
    });
  });

  it('creates an array in order, ids ascending, honouring enabled: false', async () => {
    const created = (await t.services.earningRules.create(accountId, [
      { ...valid, name: 'one' },
      { ...valid, name: 'two', enabled: false },
      { ...valid, name: 'three' },
    ])) as StoredEarningRule[];
    expect(created.map((r) => [r.name, r.enabled])).toEqual([
      ['one', true],
      ['two', false],
      ['three', true],
    ]);
    expect(created[0]!.id).toBeLessThan(created[1]!.id);
    expect(created[1]!.id).toBeLessThan(created[2]!.id);
    expect(await t.services.earningRules.create(accountId, [])).toEqual([]);
  });

  it('creates 2,500 rules in one call: five inserts of 500 rows in one transaction', async () => {
    const account = await t.services.accounts.create('Bulk');
    // Counts the INSERT statements the repository sends, and the rows in each.
    const inserts: number[] = [];
    const counting = t.db.kysely.withPlugin({
      transformQuery: ({ node }) => {
        if (InsertQueryNode.is(node) && node.values && ValuesNode.is(node.values))
          inserts.push(node.values.values.length);
        return node;
      },
      transformResult: async ({ result }) => result,
    });
    const rules = Array.from({ length: 2500 }, (_, i) => ({ ...valid, enabled: true, name: `rule ${i}` }));
    const created = await counting
      .transaction()
      .execute((trx) => insertRules(trx, account.id, rules as unknown as NewRule[], 1));
    expect(inserts).toEqual([500, 500, 500, 500, 500]);
    expect(created).toHaveLength(2500);
    expect(created.map((r) => r.name)).toEqual(Array.from({ length: 2500 }, (_, i) => `rule ${i}`));
    expect(new Set(created.map((r) => r.id)).size).toBe(2500);
    expect(await t.services.earningRules.listAll(account.id, false)).toHaveLength(2500);
  });

  it('is all or nothing: one invalid rule in an array creates none, and names its index', async () => {
    const account = await t.services.accounts.create('Atomic');
    const rules = Array.from({ length: 1200 }, (_, i) => ({ ...valid, name: `rule ${i}` }));
    rules[1100] = { ...valid, name: '' };
    const error = await refusal(t, account.id, rules);
    expect(error.code).toBe('invalid_parameter');
    expect(error.details?.[0]?.field).toBe('earning_rules.1100.name');
    expect(await t.services.earningRules.listAll(account.id, true)).toEqual([]);
  });

  it('rolls back every chunk when the database refuses a row of a later one', async () => {
    const account = await t.services.accounts.create('Rollback');
    // A trigger makes the database refuse one valid-looking row in the third chunk of 500.
    if (t.db.dialect === 'sqlite') {
      await sql`create trigger refuse_boom before insert on earning_rules when new.name = 'boom'
        begin select raise(abort, 'boom refused'); end`.execute(t.db.kysely);
    } else {
      await sql`create function refuse_boom() returns trigger language plpgsql as $$
        begin if new.name = 'boom' then raise exception 'boom refused'; end if; return new; end $$`.execute(
        t.db.kysely,
      );
      await sql`create trigger refuse_boom before insert on earning_rules for each row execute function refuse_boom()`.execute(
        t.db.kysely,
      );
    }
    try {
      const rules = Array.from({ length: 1200 }, (_, i) => ({ ...valid, name: i === 1100 ? 'boom' : `rule ${i}` }));
      await expect(t.services.earningRules.create(account.id, rules)).rejects.toThrow(/boom refused/);
      expect(await t.services.earningRules.listAll(account.id, true)).toEqual([]);
    } finally {
      await sql`drop trigger refuse_boom${sql.raw(t.db.dialect === 'postgres' ? ' on earning_rules' : '')}`.execute(
        t.db.kysely,
      );
    }
  });

  it('refuses an unknown account with not_found', async () => {
    expect((await refusal(t, 987_654, valid)).code).toBe('not_found');
  });

  const cases: Array<[string, unknown, string]> = [
    ['not an object', 'rule', 'earning_rule'],
    ['null', null, 'earning_rule'],
    ['missing name', { ...valid, name: undefined }, 'earning_rule.name'],
    ['empty name', { ...valid, name: '' }, 'earning_rule.name'],
    ['name too long', { ...valid, name: 'x'.repeat(256) }, 'earning_rule.name'],
    ['image_url not a URL', { ...valid, image_url: 'not a url' }, 'earning_rule.image_url'],
    ['image_url javascript:', { ...valid, image_url: 'javascript:alert(1)' }, 'earning_rule.image_url'],
    ['image_url too long', { ...valid, image_url: `https://x.example/${'a'.repeat(2040)}` }, 'earning_rule.image_url'],
    ['action_text too long', { ...valid, action_text: 'x'.repeat(256) }, 'earning_rule.action_text'],
    ['action_text a number', { ...valid, action_text: 5 }, 'earning_rule.action_text'],
    ['action_url not a URL', { ...valid, action_url: 'follow us' }, 'earning_rule.action_url'],
    ['tier ids not an array', { ...valid, restricted_to_vip_tier_ids: 5 }, 'earning_rule.restricted_to_vip_tier_ids'],
    ['tier id zero', { ...valid, restricted_to_vip_tier_ids: [0] }, 'earning_rule.restricted_to_vip_tier_ids.0'],
    [
      'tier id fractional',
      { ...valid, restricted_to_vip_tier_ids: [1.5] },
      'earning_rule.restricted_to_vip_tier_ids.0',
    ],
    [
      'tier id a string',
      { ...valid, restricted_to_vip_tier_ids: [1, '2'] },
      'earning_rule.restricted_to_vip_tier_ids.1',
    ],
    [
      '101 tier ids',
      { ...valid, restricted_to_vip_tier_ids: Array.from({ length: 101 }, (_, i) => i + 1) },
      'earning_rule.restricted_to_vip_tier_ids',
    ],
    ['reward missing', { ...valid, reward: undefined }, 'earning_rule.reward'],
    ['reward type not points', { ...valid, reward: { type: 'coupon' } }, 'earning_rule.reward.type'],
    ['reward_value type unknown', { ...valid, reward_value: { type: 'bonus' } }, 'earning_rule.reward_value.type'],
    [
      'variable without per_amount',
      { ...valid, reward_value: { type: 'variable', variable: { value: 1 } } },
      'earning_rule.reward_value.variable.per_amount',
    ],
    [
      'variable value zero',
      { ...valid, reward_value: { type: 'variable', variable: { value: 0, per_amount: 1 } } },
      'earning_rule.reward_value.variable.value',
    ],
    [
      'fixed value negative',
      { ...valid, reward_value: { type: 'fixed', fixed: { value: -1 } } },
      'earning_rule.reward_value.fixed.value',
    ],
    [
      'fixed value a string',
      { ...valid, reward_value: { type: 'fixed', fixed: { value: '5' } } },
      'earning_rule.reward_value.fixed.value',
    ],
    ['fixed without fixed', { ...valid, reward_value: { type: 'fixed' } }, 'earning_rule.reward_value.fixed'],
    [
      'fixed with variable too',
      { ...valid, reward_value: { type: 'fixed', fixed: { value: 1 }, variable: { value: 1, per_amount: 1 } } },
      'earning_rule.reward_value.variable',
    ],
    [
      'rolling without rolling',
      { ...valid, earning_limit: { max: 1, type: 'rolling' } },
      'earning_rule.earning_limit.rolling',
    ],
    [
      'lifetime with rolling',
      { ...valid, earning_limit: { max: 1, type: 'lifetime', rolling: { unit: 'day', unit_count: 1 } } },
      'earning_rule.earning_limit.rolling',
    ],
    ['limit type unknown', { ...valid, earning_limit: { max: 1, type: 'daily' } }, 'earning_rule.earning_limit.type'],
    ['max zero', { ...valid, earning_limit: { max: 0, type: 'lifetime' } }, 'earning_rule.earning_limit.max'],
    ['max fractional', { ...valid, earning_limit: { max: 1.5, type: 'lifetime' } }, 'earning_rule.earning_limit.max'],
    [
      'max beyond a 32-bit integer',
      { ...valid, earning_limit: { max: 2 ** 31, type: 'lifetime' } },
      'earning_rule.earning_limit.max',
    ],
    [
      'unit unknown',
      { ...valid, earning_limit: { max: 1, type: 'rolling', rolling: { unit: 'hour', unit_count: 1 } } },
      'earning_rule.earning_limit.rolling.unit',
    ],
    [
      'unit_count zero',
      { ...valid, earning_limit: { max: 1, type: 'rolling', rolling: { unit: 'day', unit_count: 0 } } },
      'earning_rule.earning_limit.rolling.unit_count',
    ],
    ['earning_limit a string', { ...valid, earning_limit: 'none' }, 'earning_rule.earning_limit'],
    ['enabled a string', { ...valid, enabled: 'no' }, 'earning_rule.enabled'],
    ['id given', { ...valid, id: 5 }, 'earning_rule.id'],
    ['unknown field', { ...valid, points: 5 }, 'earning_rule.points'],
  ];

  it.each(cases)('refuses %s: invalid_parameter naming the field first', async (_title, input, field) => {
    const error = await refusal(t, accountId, JSON.parse(JSON.stringify(input)));
    expect(error.code).toBe('invalid_parameter');
    expect(error.details?.[0]?.field).toBe(field);
    expect(error.message.startsWith(field)).toBe(true);
  });

  it('accepts the edges of every bound', async () => {
    const edge = {
      name: 'x'.repeat(255),
      image_url: `https://x.example/${'a'.repeat(2048 - 'https://x.example/'.length)}`,
      action_text: 'y'.repeat(255),
      action_url: 'http://example.com/',
      restricted_to_vip_tier_ids: Array.from({ length: 100 }, (_, i) => Number.MAX_SAFE_INTEGER - i),
      reward: { type: 'points' },
      reward_value: { type: 'fixed', fixed: { value: Number.MIN_VALUE } },
      earning_limit: { max: 2 ** 31 - 1, type: 'rolling', rolling: { unit: 'year', unit_count: 2 ** 31 - 1 } },
    };
    const rule = (await t.services.earningRules.create(accountId, edge)) as StoredEarningRule;
    const { id: _id, enabled: _enabled, activity_token: _token, ...stored } = rule;
    expect(stored).toEqual(edge);
  });
});

describe('EarningRulesService enable, disable, delete', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  it('disables, enables and deletes by id; unknown ids are not_found', async () => {
    const account = await t.services.accounts.create('Toggle');
    const rule = (await t.services.earningRules.create(account.id, valid)) as StoredEarningRule;
    expect(await t.services.earningRules.setEnabled(rule.id, false)).toEqual({ ...rule, enabled: false });
    expect(await t.services.earningRules.listAll(account.id, false)).toEqual([]);
    expect(await t.services.earningRules.listAll(account.id, true)).toEqual([{ ...rule, enabled: false }]);
    expect(await t.services.earningRules.setEnabled(rule.id, true)).toEqual(rule);
    expect(await t.services.earningRules.delete(rule.id)).toEqual({ deleted: true });
    for (const action of [
      () => t.services.earningRules.delete(rule.id),
      () => t.services.earningRules.setEnabled(rule.id, true),
      () => t.services.earningRules.listAll(987_654, true),
    ]) {
      const error = await action().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DomainError);
      expect((error as DomainError).code).toBe('not_found');
    }
  });
});
