import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ReferralProgram } from '../../src/referral-settings/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { referralSettingsFixture as spec } from '../helpers/fixtures.js';
import { LANDING_URL, member, pointsReward, refer } from './program.js';

// The program's configuration beyond the spec's shape (../shared/referrals-contract.md, "The
// program's configuration"), as `loyalty referral-settings set` and the console give it to the
// service: the defaults, the bounds, and the rule that an active program configuring any of it
// needs a qualifying activity type and a landing URL. A plain ReferralSettings object stays valid.

let t: TestApp;
let a: Tenant;
let token: string;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());
beforeEach(async () => {
  a = await createTenant(t.services);
  token = (await t.services.activityTypes.create(a.accountId, { name: 'Order' })).token;
});

const set = (input: unknown) => t.services.referralSettings.set(a.accountId, input);
const program = () => t.services.referralSettings.program(a.accountId);
const running = () => ({ ...spec, qualifying_activity_token: token, landing_url: LANDING_URL });
const settingsAnswer = () => t.app.inject({ method: 'GET', url: '/v1/referral_settings', headers: bearer(a.apiKey) });

/** The fields the refusal names, in order. */
async function refusedFields(input: unknown): Promise<string[]> {
  const error = await set(input).then(
    () => {
      throw new Error(`accepted: ${JSON.stringify(input)}`);
    },
    (e: unknown) => e as { code: string; details: { field: string }[] },
  );
  expect(error.code).toBe('invalid_parameter');
  return error.details.map((d) => d.field);
}

const DEFAULTS = {
  qualifying_activity_token: null,
  minimum_amount: '0',
  window_days: 30,
  landing_url: null,
  sender_limit_per_30_days: 50,
};
const codeReward = (reward: typeof spec.sender_reward) => ({ ...reward, fulfillment: 'code', points: null });

describe('referral-settings set: the program beyond the spec', () => {
  it('takes a plain ReferralSettings object with status active: stored with the defaults, not running', async () => {
    expect(await set(spec)).toEqual({
      ...spec,
      sender_reward: codeReward(spec.sender_reward),
      receiver_reward: codeReward(spec.receiver_reward),
      ...DEFAULTS,
    });
    const answer = await settingsAnswer();
    expect(answer.json()).toEqual({ referral_settings: spec });
    const jane = await member(t, a.accountId, 'jane@example.com');
    expectError(
      await refer(t, a, { referral_code: jane.code, receiver_customer_email: 'friend@example.com' }),
      'referral_program_inactive',
    );
    expect((await t.app.inject({ method: 'GET', url: `/r/${jane.code}` })).statusCode).toBe(404);
  });

  it('stores every field given, and GET /v1/referral_settings still shows only the spec’s shape', async () => {
    const stored = await set({
      ...running(),
      sender_reward: pointsReward('sender_reward', 500),
      receiver_reward: { ...spec.receiver_reward, fulfillment: 'code' },
      minimum_amount: 19.99,
      window_days: 7,
      sender_limit_per_30_days: 3,
    });
    const expected: ReferralProgram = {
      status: 'active',
      sender_reward: { ...spec.sender_reward, fulfillment: 'points', points: 500 },
      receiver_reward: codeReward(spec.receiver_reward) as ReferralProgram['receiver_reward'],
      qualifying_activity_token: token,
      minimum_amount: '19.99',
      window_days: 7,
      landing_url: LANDING_URL,
      sender_limit_per_30_days: 3,
    };
    expect(stored).toEqual(expected);
    expect(await program()).toEqual(expected);
    expect((await settingsAnswer()).json()).toEqual({ referral_settings: spec });
    // A replacement without a field gives it its default again.
    await set({ ...running(), minimum_amount: '20.50' });
    expect(await program()).toMatchObject({
      minimum_amount: '20.5',
      window_days: 30,
      sender_limit_per_30_days: 50,
      sender_reward: { fulfillment: 'code', points: null },
    });
  });

  it('keeps the minimum amount exactly as a decimal', async () => {
    for (const [given, stored] of [
      ['0', '0'],
      [0, '0'],
      ['20', '20'],
      [20, '20'],
      ['19.9900', '19.99'],
      [0.1, '0.1'],
      ['1000000', '1000000'],
    ] as const) {
      await set({ ...running(), minimum_amount: given });
      expect((await program())?.minimum_amount, String(given)).toBe(stored);
    }
  });

  it('takes any program field on an inactive program without a qualifying type or landing URL', async () => {
    await set({ ...spec, status: 'inactive', window_days: 10, sender_reward: pointsReward('sender_reward', 5) });
    expect(await program()).toMatchObject({ status: 'inactive', window_days: 10, qualifying_activity_token: null });
  });

  it.each([
    ['minimum_amount', { minimum_amount: '5' }],
    ['window_days', { window_days: 10 }],
    ['sender_limit_per_30_days', { sender_limit_per_30_days: 5 }],
    ['a reward’s fulfillment', { sender_reward: { ...spec.sender_reward, fulfillment: 'code' } }],
    ['a reward’s points', { receiver_reward: pointsReward('receiver_reward', 10) }],
  ])('refuses an active program naming %s without a qualifying type and landing URL, naming both', async (_, extra) => {
    const before = await set(spec);
    expect(await refusedFields({ ...spec, ...extra })).toEqual([
      'referral_settings.qualifying_activity_token',
      'referral_settings.landing_url',
    ]);
    expect(await program()).toEqual(before);
  });

  it('refuses an active program with one of the two, naming the other', async () => {
    expect(await refusedFields({ ...spec, qualifying_activity_token: token })).toEqual([
      'referral_settings.landing_url',
    ]);
    expect(await refusedFields({ ...spec, landing_url: LANDING_URL })).toEqual([
      'referral_settings.qualifying_activity_token',
    ]);
    expect(await refusedFields({ ...running(), landing_url: null })).toEqual(['referral_settings.landing_url']);
    expect(await refusedFields({ ...running(), qualifying_activity_token: null })).toEqual([
      'referral_settings.qualifying_activity_token',
    ]);
    expect(await program()).toBeUndefined();
  });

  it.each([
    ['a landing URL that is not https://', { landing_url: 'http://shop.example/' }, 'landing_url'],
    ['a landing URL that is not a URL', { landing_url: 'shop.example' }, 'landing_url'],
    ['an unknown qualifying activity token', { qualifying_activity_token: 'nope' }, 'qualifying_activity_token'],
    ['a negative minimum amount', { minimum_amount: '-1' }, 'minimum_amount'],
    ['a minimum amount that is not a decimal', { minimum_amount: 'twenty' }, 'minimum_amount'],
    ['a minimum amount with 5 decimal places', { minimum_amount: '0.00001' }, 'minimum_amount'],
    ['window_days 0', { window_days: 0 }, 'window_days'],
    ['window_days 366', { window_days: 366 }, 'window_days'],
    ['window_days 1.5', { window_days: 1.5 }, 'window_days'],
    ['sender_limit_per_30_days 0', { sender_limit_per_30_days: 0 }, 'sender_limit_per_30_days'],
    ['sender_limit_per_30_days 10,001', { sender_limit_per_30_days: 10_001 }, 'sender_limit_per_30_days'],
    [
      'points fulfillment without points',
      { sender_reward: { ...spec.sender_reward, fulfillment: 'points' } },
      'sender_reward.points',
    ],
    ['0 points', { receiver_reward: pointsReward('receiver_reward', 0) }, 'receiver_reward.points'],
    ['1,000,001 points', { receiver_reward: pointsReward('receiver_reward', 1_000_001) }, 'receiver_reward.points'],
    [
      'a fulfillment that is neither code nor points',
      { sender_reward: { ...spec.sender_reward, fulfillment: 'cash' } },
      'sender_reward.fulfillment',
    ],
    ['an unknown field', { referral_bonus: 5 }, 'referral_bonus'],
  ])('refuses %s, naming the field, storing nothing', async (_, extra, field) => {
    const before = await set(running());
    expect(await refusedFields({ ...running(), ...extra })).toContain(`referral_settings.${field}`);
    expect(await program()).toEqual(before);
  });

  it("refuses another account's activity type as the qualifying one", async () => {
    const b = await createTenant(t.services, 'Shop B');
    const theirs = (await t.services.activityTypes.create(b.accountId, { name: 'Order' })).token;
    expect(await refusedFields({ ...running(), qualifying_activity_token: theirs })).toEqual([
      'referral_settings.qualifying_activity_token',
    ]);
  });

  it('takes the bounds themselves', async () => {
    await set({
      ...running(),
      window_days: 365,
      sender_limit_per_30_days: 10_000,
      sender_reward: pointsReward('sender_reward', 1_000_000),
      receiver_reward: pointsReward('receiver_reward', 1),
    });
    await set({ ...running(), window_days: 1, sender_limit_per_30_days: 1 });
    expect(await program()).toMatchObject({ window_days: 1, sender_limit_per_30_days: 1 });
  });
});
