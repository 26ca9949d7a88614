// Data for the benchmark: accounts with credentials, settings and rules through the services
// (so every row is valid), and bulk identities through one SQL statement per table.
import { sql } from 'kysely';
import { ALL_SCOPES } from '../src/auth/scopes.js';
import type { Services } from '../src/services.js';
import type { Db } from '../src/storage/db.js';

export interface BenchAccount {
  accountId: number;
  apiKey: string;
  accessToken: string;
  /** distinct_ids that exist, for the update half of create_or_update. */
  existingDistinctIds: (i: number) => string;
  existingCount: number;
  /** The token of an "order" activity type with two rules bound (1 point per 1 spent; 10 points, 3 a day). */
  activityToken: string;
  /** The id of one of the account's customers, for any integer. */
  customerId: (i: number) => number;
}

const REFERRAL_SETTINGS = {
  status: 'active',
  sender_reward: {
    name: '$5 off coupon',
    image: { url: 'https://cdn.example.com/5-off.png', content_type: 'image/png' },
  },
  receiver_reward: { name: '10% off', image: { url: 'https://cdn.example.com/10.png', content_type: 'image/png' } },
};

/** A rule of each shape in turn, so pages hold every serialisation branch. */
export function benchRule(i: number): Record<string, unknown> {
  const limits = [
    null,
    { max: 1, type: 'lifetime' },
    { max: 3, type: 'rolling', rolling: { unit: 'month', unit_count: 1 } },
  ];
  return {
    name: `Rule ${i}`,
    image_url: `https://cdn.example.com/earning/${i}.svg`,
    action_text: i % 2 === 0 ? null : 'Do it',
    action_url: i % 2 === 0 ? null : `https://shop.example.com/action/${i}`,
    restricted_to_vip_tier_ids: i % 5 === 0 ? [1, 2] : [],
    reward: { type: 'points' },
    reward_value:
      i % 2 === 0
        ? { type: 'variable', variable: { value: 1, per_amount: 1 } }
        : { type: 'fixed', fixed: { value: 50 } },
    earning_limit: limits[i % 3],
  };
}

async function createRules(services: Services, accountId: number, count: number): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - start) }, (_, i) => benchRule(start + i));
    await services.earningRules.create(accountId, batch);
  }
}

/** The distinct_id of the seeded identity of an account's k-th customer (k from 1): see bulkIdentities. */
export const seededDistinctId = (accountId: number | string, k: number) => `a${accountId}-${k}`;
/** A seeded identity's distinct_id: the account and k. */
export const SEEDED_DISTINCT_ID = /^a(\d+)-(\d+)$/;

/** Inserts `count` customers and one identity each, `${prefix}-${n}`, in two statements. */
async function bulkIdentities(db: Db, accountId: number, prefix: string, count: number): Promise<void> {
  const now = Date.now();
  const series =
    db.dialect === 'postgres'
      ? sql`select n from generate_series(1, ${count}) as n`
      : sql`with recursive s(n) as (select 1 union all select n + 1 from s where n < ${count}) select n from s`;
  await sql`insert into customers (account_id, email, email_normalized, first_name, last_name, created_at, updated_at)
    select ${accountId}, ${`${prefix}-`} || n || '@bench.example', ${`${prefix}-`} || n || '@bench.example', 'Bench', null, ${now}, ${now}
    from (${series}) as series`.execute(db.kysely);
  await sql`insert into customer_identities (account_id, customer_id, distinct_id, email, first_name, last_name, properties, created_at, updated_at)
    select account_id, id, replace(email, '@bench.example', ''), email, first_name, last_name, '{}', created_at, updated_at
    from customers where account_id = ${accountId}`.execute(db.kysely);
}

export async function seedAccount(
  services: Services,
  db: Db,
  name: string,
  rules: number,
  identities: number,
  log: (line: string) => void,
): Promise<BenchAccount> {
  const created = await services.accounts.create(name);
  await services.referralSettings.set(created.id, REFERRAL_SETTINGS);
  const started = Date.now();
  await createRules(services, created.id, rules);
  await bulkIdentities(db, created.id, `a${created.id}`, identities);
  const order = await services.activityTypes.create(created.id, { name: 'Place an order' });
  await services.earningRules.create(created.id, [
    { ...benchRule(2), name: 'Order', activity_token: order.token, earning_limit: null },
    {
      ...benchRule(1),
      name: 'Order bonus',
      activity_token: order.token,
      earning_limit: { max: 3, type: 'rolling', rolling: { unit: 'day', unit_count: 1 } },
    },
  ]);
  const span = await sql<{ first: number | string; last: number | string }>`
    select min(id) as first, max(id) as last from customers where account_id = ${created.id}`.execute(db.kysely);
  const first = Number(span.rows[0]?.first);
  const customerCount = Number(span.rows[0]?.last) - first + 1;
  log(`  ${name}: ${rules} rules, ${identities} identities in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const key = await services.auth.createApiKey(created.id, ALL_SCOPES);
  const app = await services.apps.create({ name: `${name} app` });
  const token = await services.auth.issueAccessToken({
    accountId: created.id,
    clientId: app.client_id,
    ttlSeconds: 86_400,
  });
  return {
    accountId: created.id,
    apiKey: key.key,
    accessToken: token.access_token,
    existingDistinctIds: (i) => seededDistinctId(created.id, (i % identities) + 1),
    existingCount: identities,
    activityToken: order.token,
    customerId: (i) => first + (i % customerCount),
  };
}
