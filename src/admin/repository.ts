import { type Kysely, sql } from 'kysely';
import type { Database } from '../storage/schema.js';

/** The overview's figures of one account. */
export interface ProgramFigures {
  customers: number;
  members: number;
  pointsIssued: number;
  pointsSpent: number;
  activitiesToday: number;
}

/**
 * Customers, points credited and debited since `since` (the sums of the ledger's positive and
 * negative entries), and activities received since `today` (UTC midnight): one aggregate each over the account's rows.
 */
export async function programFigures(
  db: Kysely<Database>,
  accountId: number,
  since: number,
  today: number,
): Promise<ProgramFigures> {
  const customers = await db
    .selectFrom('customers')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('all'),
      eb.fn.sum<number | string | null>(sql`case when state = 'member' then 1 else 0 end`).as('members'),
    ])
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  const points = await db
    .selectFrom('points_transactions')
    .select((eb) => [
      // Credits that count as earned: a refund gives back what was spent, it issues nothing.
      eb.fn
        .sum<number | string | null>(
          sql`case when points_change > 0 and counts_as_earned = 1 then points_change else 0 end`,
        )
        .as('issued'),
      eb.fn.sum<number | string | null>(sql`case when points_change < 0 then -points_change else 0 end`).as('spent'),
    ])
    .where('account_id', '=', accountId)
    .where('created_at', '>=', since)
    .executeTakeFirstOrThrow();
  const activities = await db
    .selectFrom('activities')
    .select((eb) => eb.fn.countAll<number | string>().as('today'))
    .where('account_id', '=', accountId)
    .where('created_at', '>=', today)
    .executeTakeFirstOrThrow();
  return {
    customers: Number(customers.all),
    members: Number(customers.members ?? 0),
    pointsIssued: Number(points.issued ?? 0),
    pointsSpent: Number(points.spent ?? 0),
    activitiesToday: Number(activities.today),
  };
}

/** An activity as a customer's page shows it: its type and the points it credited. */
export interface CustomerActivity {
  id: number;
  activityTypeName: string;
  distinctId: string | null;
  occurredAt: number;
  points: number;
}

/** The customer's latest `limit` activities, newest first, each with the sum of its credits. */
export async function latestActivities(
  db: Kysely<Database>,
  accountId: number,
  customerId: number,
  limit: number,
): Promise<CustomerActivity[]> {
  const rows = await db
    .selectFrom('activities')
    .innerJoin('activity_types', 'activity_types.id', 'activities.activity_type_id')
    .leftJoin('points_transactions', 'points_transactions.activity_id', 'activities.id')
    .select((eb) => [
      'activities.id',
      'activity_types.name as activityTypeName',
      'activities.distinct_id as distinctId',
      'activities.occurred_at as occurredAt',
      eb.fn.coalesce(eb.fn.sum<number | string>('points_transactions.points_change'), sql<number>`0`).as('points'),
    ])
    .where('activities.account_id', '=', accountId)
    .where('activities.customer_id', '=', customerId)
    .groupBy(['activities.id', 'activity_types.name', 'activities.distinct_id', 'activities.occurred_at'])
    .orderBy('activities.id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: Number(row.id),
    activityTypeName: row.activityTypeName,
    distinctId: row.distinctId,
    occurredAt: Number(row.occurredAt),
    points: Number(row.points),
  }));
}

/** The console users who posted these points transactions, by transaction id (those with one only). */
export async function adjustmentStaff(
  db: Kysely<Database>,
  accountId: number,
  transactionIds: readonly number[],
): Promise<Map<number, string>> {
  if (transactionIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('points_transactions')
    .innerJoin('users', 'users.id', 'points_transactions.created_by_user_id')
    .select(['points_transactions.id', 'users.email'])
    .where('points_transactions.account_id', '=', accountId)
    .where('points_transactions.id', 'in', transactionIds)
    .execute();
  return new Map(rows.map((row) => [Number(row.id), row.email]));
}

/** The points each of these transactions moved, by transaction id (the account's only). */
export async function pointsChanges(
  db: Kysely<Database>,
  accountId: number,
  transactionIds: readonly number[],
): Promise<Map<number, number>> {
  if (transactionIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('points_transactions')
    .select(['id', 'points_change'])
    .where('account_id', '=', accountId)
    .where('id', 'in', transactionIds)
    .execute();
  return new Map(rows.map((row) => [Number(row.id), Number(row.points_change)]));
}

/** Which steps of setting up a program the account has taken, for the overview's checklist. */
export interface SetupProgress {
  /** Points settings saved (named points). */
  pointsNamed: boolean;
  activityType: boolean;
  /** An enabled earning rule bound to an activity type: one that can credit. */
  creditingRule: boolean;
  vipTier: boolean;
  reward: boolean;
  /** A live API key, or an app connected through OAuth. */
  apiAccess: boolean;
}

/** What the account has set up, in one round trip (each an EXISTS over its own rows). */
export async function setupProgress(db: Kysely<Database>, accountId: number): Promise<SetupProgress> {
  const row = await db
    .selectNoFrom((eb) => [
      eb.exists(eb.selectFrom('points_settings').select('account_id').where('account_id', '=', accountId)).as('named'),
      eb.exists(eb.selectFrom('activity_types').select('id').where('account_id', '=', accountId)).as('types'),
      eb
        .exists(
          eb
            .selectFrom('earning_rules')
            .select('id')
            .where('account_id', '=', accountId)
            .where('enabled', '=', 1)
            .where('activity_type_id', 'is not', null),
        )
        .as('rules'),
      eb.exists(eb.selectFrom('vip_tiers').select('id').where('account_id', '=', accountId)).as('tiers'),
      eb.exists(eb.selectFrom('points_products').select('id').where('account_id', '=', accountId)).as('rewards'),
      eb
        .exists(
          eb.selectFrom('api_keys').select('id').where('account_id', '=', accountId).where('revoked_at', 'is', null),
        )
        .as('keys'),
      eb
        .exists(
          eb
            .selectFrom('oauth_grants')
            .select('id')
            .where('account_id', '=', accountId)
            .where('revoked_at', 'is', null),
        )
        .as('grants'),
    ])
    .executeTakeFirstOrThrow();
  // SQLite answers 0 or 1, PostgreSQL a boolean.
  const yes = (value: unknown) => Boolean(Number(value));
  return {
    pointsNamed: yes(row.named),
    activityType: yes(row.types),
    creditingRule: yes(row.rules),
    vipTier: yes(row.tiers),
    reward: yes(row.rewards),
    apiAccess: yes(row.keys) || yes(row.grants),
  };
}
