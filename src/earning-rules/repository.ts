import type { Kysely, SelectQueryBuilder, Transaction } from 'kysely';
import type { Direction } from '../pagination/cursor.js';
import { compiledQuery } from '../storage/compiled-query.js';
import type { Database, EarningRuleRow, EarningRulesTable, NewEarningRule } from '../storage/schema.js';
import type { EarningLimit, EarningRule, RewardValue, StoredEarningRule } from './schemas.js';

type Executor = Kysely<Database> | Transaction<Database>;

// 17 bound values per row: 500 rows stay under SQLite's 32,766 and PostgreSQL's 65,535
// parameters per statement, while a 1,000-rule file takes two statements, not a thousand.
const INSERT_CHUNK = 500;

/**
 * The page query, exactly as run: the account's enabled rules strictly beyond `boundary` in
 * `direction` (all of them when `boundary` is null), nearest first, at most `rows` of them.
 * `next` reads `id < boundary order by id desc`, `previous` reads `id > boundary order by id
 * asc`; both are a range of the `earning_rules_page` index (account_id, enabled, id), so the
 * hundredth page costs what the first does. Exported for the query-plan test.
 */
export function pageQuery(
  db: Executor,
  accountId: number,
  direction: Direction,
  boundary: number | null,
  rows: number,
): SelectQueryBuilder<Database, 'earning_rules', EarningRuleRow> {
  let query = db.selectFrom('earning_rules').selectAll().where('account_id', '=', accountId).where('enabled', '=', 1);
  if (boundary !== null) query = query.where('id', direction === 'next' ? '<' : '>', boundary);
  return query.orderBy('id', direction === 'next' ? 'desc' : 'asc').limit(rows);
}

/** Up to `rows` enabled rules beyond `boundary`, nearest first (see `pageQuery`). */
export async function findPage(
  db: Executor,
  accountId: number,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<EarningRule[]> {
  return (await pageQuery(db, accountId, direction, boundary, rows).execute()).map(toEarningRule);
}

/** Every rule of the account (enabled ones only unless `includeDisabled`), newest first. */
export async function listRules(
  db: Executor,
  accountId: number,
  includeDisabled: boolean,
): Promise<StoredEarningRule[]> {
  let query = withActivityToken(db).where('earning_rules.account_id', '=', accountId);
  if (!includeDisabled) query = query.where('earning_rules.enabled', '=', 1);
  return (await query.orderBy('earning_rules.id', 'desc').execute()).map(toStoredEarningRule);
}

/**
 * Up to `rows` of the account's rules, disabled ones too, beyond `boundary` in `direction`,
 * nearest first, with their activity tokens: the console's pages.
 */
export async function findStoredPage(
  db: Executor,
  accountId: number,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<StoredEarningRule[]> {
  let query = withActivityToken(db).where('earning_rules.account_id', '=', accountId);
  if (boundary !== null) query = query.where('earning_rules.id', direction === 'next' ? '<' : '>', boundary);
  const found = await query
    .orderBy('earning_rules.id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
  return found.map(toStoredEarningRule);
}

/** One rule as the CLI shows it (of `accountId` only, when given), or undefined. */
export async function findStoredRule(
  db: Executor,
  id: number,
  accountId?: number,
): Promise<StoredEarningRule | undefined> {
  let query = withActivityToken(db).where('earning_rules.id', '=', id);
  if (accountId !== undefined) query = query.where('earning_rules.account_id', '=', accountId);
  const row = await query.executeTakeFirst();
  return row && toStoredEarningRule(row);
}

/** The rules with the token of the activity type each is bound to (null when none). */
function withActivityToken(db: Executor) {
  return db
    .selectFrom('earning_rules')
    .leftJoin('activity_types', 'activity_types.id', 'earning_rules.activity_type_id')
    .selectAll('earning_rules')
    .select('activity_types.token as activity_token');
}

/**
 * The enabled rules of the account bound to an activity type, ascending id: the rules an
 * activity of that type is evaluated against, in the order the contract gives.
 */
export async function findBoundRules(db: Executor, accountId: number, activityTypeId: number): Promise<EarningRule[]> {
  return (await boundRulesQuery(db, { accountId, activityTypeId })).map(toEarningRule);
}

const boundRulesQuery = compiledQuery((db, v: { accountId: number; activityTypeId: number }) =>
  db
    .selectFrom('earning_rules')
    .selectAll()
    .where('activity_type_id', '=', v.activityTypeId)
    .where('account_id', '=', v.accountId)
    .where('enabled', '=', 1)
    .orderBy('id'),
);

/**
 * The account's earning-rules version: it changes with every change to the account's rules,
 * so a page served at one version is exact for as long as the version stays.
 */
export async function findRulesVersion(db: Executor, accountId: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('accounts')
    .select('earning_rules_version')
    .where('id', '=', accountId)
    .executeTakeFirst();
  return row?.earning_rules_version;
}

/** Raises the account's earning-rules version (inside the transaction that changes its rules). */
async function bumpRulesVersion(db: Executor, accountId: number): Promise<void> {
  await db
    .updateTable('accounts')
    .set((eb) => ({ earning_rules_version: eb('earning_rules_version', '+', 1) }))
    .where('id', '=', accountId)
    .execute();
}

/** A rule to insert: every field of the rule, whether it starts enabled, and its activity type. */
export type NewRule = Omit<EarningRule, 'id'> & {
  enabled: boolean;
  activityType: { id: number; token: string } | null;
};

/**
 * Inserts the account's new rules in chunks (call inside a transaction); returns them in
 * insertion order.
 */
export async function insertRules(
  db: Executor,
  accountId: number,
  rules: NewRule[],
  now: number,
): Promise<StoredEarningRule[]> {
  const rows = rules.map((rule) => toRow(accountId, rule, now));
  const inserted: EarningRuleRow[] = [];
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const chunk = rows.slice(start, start + INSERT_CHUNK);
    inserted.push(...(await db.insertInto('earning_rules').values(chunk).returningAll().execute()));
  }
  await bumpRulesVersion(db, accountId);
  // RETURNING promises no order; ids grow with insertion order within the transaction.
  const tokens = new Map(
    rules.flatMap((rule) => (rule.activityType ? [[rule.activityType.id, rule.activityType.token]] : [])),
  );
  return inserted
    .sort((a, b) => a.id - b.id)
    .map((row) => toStoredEarningRule({ ...row, activity_token: tokens.get(row.activity_type_id ?? 0) ?? null }));
}

/** Sets `enabled` (call inside a transaction); the updated rule, or undefined when no rule has that id. */
export async function updateRuleEnabled(
  db: Executor,
  id: number,
  enabled: boolean,
  now: number,
): Promise<StoredEarningRule | undefined> {
  const row = await db
    .updateTable('earning_rules')
    .set({ enabled: enabled ? 1 : 0, updated_at: now })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  if (!row) return undefined;
  await bumpRulesVersion(db, row.account_id);
  return findStoredRule(db, id);
}

/**
 * Replaces every field of the account's rule `id` (call inside a transaction); the updated rule,
 * or undefined when the account has no rule with that id.
 */
export async function updateRule(
  db: Executor,
  accountId: number,
  id: number,
  rule: NewRule,
  now: number,
): Promise<StoredEarningRule | undefined> {
  const { account_id: _account, created_at: _created, ...fields } = toRow(accountId, rule, now);
  const row = await db
    .updateTable('earning_rules')
    .set(fields)
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .returning('id')
    .executeTakeFirst();
  if (!row) return undefined;
  await bumpRulesVersion(db, accountId);
  return findStoredRule(db, id);
}

/** Deletes a rule (call inside a transaction); false when no rule has that id. */
export async function deleteRule(db: Executor, id: number): Promise<boolean> {
  const row = await db.deleteFrom('earning_rules').where('id', '=', id).returning('account_id').executeTakeFirst();
  if (row) await bumpRulesVersion(db, row.account_id);
  return row !== undefined;
}

/** The row of a new rule. */
function toRow(accountId: number, rule: NewRule, now: number): NewEarningRule {
  const limit = rule.earning_limit;
  const rolling = limit?.type === 'rolling' ? limit.rolling : null;
  return {
    account_id: accountId,
    enabled: rule.enabled ? 1 : 0,
    name: rule.name,
    image_url: rule.image_url,
    action_text: rule.action_text,
    action_url: rule.action_url,
    restricted_to_vip_tier_ids: JSON.stringify(rule.restricted_to_vip_tier_ids),
    reward_type: rule.reward.type,
    reward_value_type: rule.reward_value.type,
    reward_value:
      rule.reward_value.type === 'variable' ? rule.reward_value.variable.value : rule.reward_value.fixed.value,
    reward_per_amount: rule.reward_value.type === 'variable' ? rule.reward_value.variable.per_amount : null,
    earning_limit_type: limit?.type ?? null,
    earning_limit_max: limit?.max ?? null,
    earning_limit_unit: rolling?.unit ?? null,
    earning_limit_unit_count: rolling?.unit_count ?? null,
    activity_type_id: rule.activityType?.id ?? null,
    created_at: now,
    updated_at: now,
  };
}

/** The API form of a row: only the keys of its reward-value and limit kinds. */
export function toEarningRule(row: EarningRuleRow): EarningRule {
  return {
    id: row.id,
    name: row.name,
    image_url: row.image_url,
    action_text: row.action_text,
    action_url: row.action_url,
    restricted_to_vip_tier_ids: JSON.parse(row.restricted_to_vip_tier_ids) as number[],
    reward: { type: row.reward_type as 'points' },
    reward_value: toRewardValue(row),
    earning_limit: toEarningLimit(row),
  };
}

function toStoredEarningRule(row: EarningRuleRow & { activity_token: string | null }): StoredEarningRule {
  return { ...toEarningRule(row), enabled: row.enabled === 1, activity_token: row.activity_token };
}

function toRewardValue(row: EarningRuleRow): RewardValue {
  if (row.reward_value_type === 'fixed') return { type: 'fixed', fixed: { value: row.reward_value } };
  return {
    type: 'variable',
    variable: { value: row.reward_value, per_amount: present(row.reward_per_amount, 'reward_per_amount', row) },
  };
}

function toEarningLimit(row: EarningRuleRow): EarningLimit {
  if (row.earning_limit_type === null) return null;
  const max = present(row.earning_limit_max, 'earning_limit_max', row);
  if (row.earning_limit_type === 'lifetime') return { max, type: 'lifetime' };
  return {
    max,
    type: 'rolling',
    rolling: {
      unit: present(row.earning_limit_unit, 'earning_limit_unit', row),
      unit_count: present(row.earning_limit_unit_count, 'earning_limit_unit_count', row),
    },
  };
}

// Rows are written only by `toRow`, so a missing value is corrupt data: fail loudly (500 with
// the detail in the log) rather than invent a value.
function present<T>(value: T | null, column: keyof EarningRulesTable, row: EarningRuleRow): T {
  if (value === null) throw new Error(`earning rule ${row.id} has no ${column} for its kind`);
  return value;
}
