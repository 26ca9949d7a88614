import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Referral } from '../../src/referrals/schemas.js';
import { bearer, type Tenant, type TestApp } from '../helpers/app.js';
import { engineState, rowCount } from '../helpers/engine.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';

// What the referral suites share: a running program set up through the services, members with
// their referral codes, the API's POST /v1/referrals, and the state a refusal must leave as it was.

export const DAY_MS = 86_400_000;
export const LANDING_URL = 'https://shop.example/welcome?utm=loyalty';

/** A reward of the program given as points. */
export const pointsReward = (side: 'sender_reward' | 'receiver_reward', points: number) => ({
  ...referralSettingsFixture[side],
  fulfillment: 'points' as const,
  points,
});

/**
 * Sets up a running program in the account: an `Order` activity type (its token qualifies), the
 * fixture's rewards (codes), the landing URL, and `extra` fields over them. Answers the token.
 */
export async function runningProgram(t: TestApp, accountId: number, extra: Record<string, unknown> = {}) {
  const existing = (await t.services.activityTypes.list(accountId)).find((type) => type.name === 'Order');
  const token = existing?.token ?? (await t.services.activityTypes.create(accountId, { name: 'Order' })).token;
  await t.services.referralSettings.set(accountId, {
    ...referralSettingsFixture,
    qualifying_activity_token: token,
    landing_url: LANDING_URL,
    ...extra,
  });
  return token;
}

export interface Member {
  id: number;
  email: string;
  /** Their referral code: the last segment of their referral URL. */
  code: string;
}

/** A new member customer of the account, with their referral code. */
export async function member(t: TestApp, accountId: number, email: string): Promise<Member> {
  const { id } = await t.services.customers.create(accountId, { email });
  const shown = await t.services.customers.get(accountId, id);
  expect(shown.referral_url).toMatch(/\/r\/[0-9A-Za-z]{8,}$/);
  return { id, email, code: shown.referral_url!.split('/').pop()! };
}

/** POST /v1/referrals with `referral` as the body's referral. */
export const refer = (
  t: TestApp,
  tenant: Tenant,
  referral: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> =>
  t.app.inject({
    method: 'POST',
    url: '/v1/referrals',
    headers: { ...bearer(tenant.apiKey), ...headers },
    payload: { referral },
  });

/** A referral the API made (201), as it answered it. */
export async function referred(t: TestApp, tenant: Tenant, referral: Record<string, unknown>): Promise<Referral> {
  const response = await refer(t, tenant, referral);
  expect(response.statusCode, response.body).toBe(201);
  return response.json<{ referral: Referral }>().referral;
}

/** GET `url` with the tenant's key, answered 200: the body. */
export async function read<T = any>(t: TestApp, tenant: Tenant, url: string): Promise<T> {
  const response = await t.app.inject({ method: 'GET', url, headers: bearer(tenant.apiKey) });
  expect(response.statusCode, `${url}: ${response.body}`).toBe(200);
  return response.json<T>();
}

/** POST an activity of the token for the email, answered 201: the activity. */
export async function order(
  t: TestApp,
  tenant: Tenant,
  token: string,
  customerEmail: string,
  properties?: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  const response = await t.app.inject({
    method: 'POST',
    url: '/v1/activities',
    headers: bearer(tenant.apiKey),
    payload: {
      activity: { token, customer_email: customerEmail, ...(properties ? { properties } : {}), ...extra },
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().activity;
}

/**
 * What a refused referral must leave as it was: the engine's tables and every balance, and the
 * referrals, reward fulfillments, events and clicks.
 */
export async function writtenState(t: TestApp): Promise<Record<string, unknown>> {
  const db = t.db.kysely;
  return {
    ...(await engineState(db)),
    referrals: await rowCount(db, 'referrals'),
    reward_fulfillments: await rowCount(db, 'reward_fulfillments'),
    events: await rowCount(db, 'events'),
    referral_clicks: await rowCount(db, 'referral_clicks'),
  };
}
