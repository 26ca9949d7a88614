import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Services } from '../../src/services.js';
import type { Database } from '../../src/storage/schema.js';
import { earningRuleFixture } from './fixtures.js';

// Helpers of the points-engine suites: a program set up through the services, and the checks a
// bank would make of a ledger.

/** A fixed rule of `points`, bound to `token`, with `extra` fields (earning_limit, restricted_to_vip_tier_ids…). */
export const fixedRule = (name: string, points: number, token: string | null, extra: Record<string, unknown> = {}) => ({
  ...earningRuleFixture(name),
  reward_value: { type: 'fixed', fixed: { value: points } },
  activity_token: token,
  ...extra,
});

/** A variable rule: `value` points per `perAmount` of `properties.amount`. */
export const variableRule = (
  name: string,
  value: number,
  perAmount: number,
  token: string | null,
  extra: Record<string, unknown> = {},
) => ({
  ...earningRuleFixture(name),
  reward_value: { type: 'variable', variable: { value, per_amount: perAmount } },
  activity_token: token,
  ...extra,
});

/** An activity type of the account and the rules bound to it (each rule's `activity_token` set to its token). */
export async function program(
  services: Services,
  accountId: number,
  rules: (token: string) => Record<string, unknown>[],
  name = 'Place an order',
): Promise<{ token: string; ruleIds: number[] }> {
  const type = await services.activityTypes.create(accountId, { name });
  const made = rules(type.token);
  if (made.length === 0) return { token: type.token, ruleIds: [] };
  const created = await services.earningRules.create(accountId, made);
  return { token: type.token, ruleIds: (Array.isArray(created) ? created : [created]).map((rule) => rule.id) };
}

/** Rows of a table, over every account, or of account `accountId` only. */
export async function rowCount(db: Kysely<Database>, table: keyof Database, accountId?: number): Promise<number> {
  const ofAccount = accountId === undefined ? sql`` : sql` where account_id = ${accountId}`;
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}${ofAccount}`.execute(
    db,
  );
  return Number(rows[0]?.n ?? 0);
}

/** What a refusal must leave unchanged: the rows of the engine's tables and every balance. */
export async function engineState(db: Kysely<Database>): Promise<Record<string, unknown>> {
  const tables = ['customers', 'activities', 'points_transactions', 'idempotency_keys', 'vip_tiers'] as const;
  const state: Record<string, unknown> = {};
  for (const table of tables) state[table] = await rowCount(db, table);
  state.balances = await db
    .selectFrom('customers')
    .select(['id', 'points_balance', 'points_earned', 'vip_tier_id'])
    .orderBy('id')
    .execute();
  return state;
}

/**
 * The bank's check of every customer of the database: the balance equals the sum of the ledger
 * and is never below 0, and points earned equal the sum of the credits. Returns the customers
 * that fail, with what was found (an empty list when the books balance).
 */
export async function unbalancedCustomers(db: Kysely<Database>): Promise<unknown[]> {
  const { rows } = await sql<Record<string, unknown>>`
    select c.id, c.points_balance, c.points_earned, c.earned_before_import,
           coalesce(sum(t.points_change), 0) as ledger,
           coalesce(sum(case when t.points_change > 0 and t.counts_as_earned = 1 then t.points_change else 0 end), 0) as credits
    from customers c left join points_transactions t on t.customer_id = c.id
    group by c.id, c.points_balance, c.points_earned, c.earned_before_import`.execute(db);
  return rows.filter(
    (row) =>
      Number(row.points_balance) !== Number(row.ledger) ||
      // Points earned: the ledger's counted credits, and what an import brought beyond its balance.
      Number(row.points_earned) !== Number(row.credits) + Number(row.earned_before_import) ||
      Number(row.points_balance) < 0,
  );
}
