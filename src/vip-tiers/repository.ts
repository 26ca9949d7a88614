import { type ExpressionBuilder, type Kysely, PostgresAdapter, type Transaction } from 'kysely';
import { compiledQuery } from '../storage/compiled-query.js';
import { isUniqueViolation } from '../storage/errors.js';
import type { Database, VipTierRow } from '../storage/schema.js';
import type { VipTier, VipTierChange, VipTierInput } from './schemas.js';

/** The account's tiers, ascending milestone. */
export async function listTiers(db: Kysely<Database>, accountId: number): Promise<VipTier[]> {
  const rows = await db
    .selectFrom('vip_tiers')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('milestone')
    .execute();
  return rows.map(toVipTier);
}

/** The tier with this id and its account, or undefined. */
export async function findTier(
  db: Kysely<Database>,
  id: number,
): Promise<(VipTier & { accountId: number }) | undefined> {
  const row = await db.selectFrom('vip_tiers').selectAll().where('id', '=', id).executeTakeFirst();
  return row && { ...toVipTier(row), accountId: row.account_id };
}

/** Inserts a tier unless the account has one at its milestone (then undefined). */
export async function insertTier(
  trx: Transaction<Database>,
  accountId: number,
  tier: VipTierInput,
  now: number,
): Promise<VipTier | undefined> {
  const row = await trx
    .insertInto('vip_tiers')
    .values({
      account_id: accountId,
      name: tier.name,
      image_url: tier.image_url ?? '',
      milestone: tier.milestone,
      perks: JSON.stringify(tier.perks ?? []),
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(['account_id', 'milestone']).doNothing())
    .returningAll()
    .executeTakeFirst();
  return row && toVipTier(row);
}

/**
 * Changes the fields given; the tier, undefined when there is no tier with this id, or
 * 'milestone_taken' when another tier of the account has the new milestone (the unique
 * constraint refused it: on PostgreSQL the transaction can then only roll back).
 */
export async function updateTier(
  trx: Transaction<Database>,
  id: number,
  change: VipTierChange,
  now: number,
): Promise<VipTier | 'milestone_taken' | undefined> {
  try {
    const row = await updateTierQuery(trx, id, change, now).executeTakeFirst();
    return row && toVipTier(row);
  } catch (error) {
    if (isUniqueViolation(error)) return 'milestone_taken';
    throw error;
  }
}

function updateTierQuery(trx: Transaction<Database>, id: number, change: VipTierChange, now: number) {
  return trx
    .updateTable('vip_tiers')
    .set({
      ...(change.name === undefined ? {} : { name: change.name }),
      ...(change.milestone === undefined ? {} : { milestone: change.milestone }),
      ...(change.image_url === undefined ? {} : { image_url: change.image_url }),
      ...(change.perks === undefined ? {} : { perks: JSON.stringify(change.perks) }),
      updated_at: now,
    })
    .where('id', '=', id)
    .returningAll();
}

/** Deletes a tier (customers in it are left for `assignAccountTiers` to place). */
export async function deleteTier(trx: Transaction<Database>, id: number): Promise<void> {
  await trx.deleteFrom('vip_tiers').where('id', '=', id).execute();
}

/**
 * Serialises changes to one account's tiers (call first in their transaction): two changes
 * placing the same customers at once could otherwise lock them in different orders and deadlock
 * on PostgreSQL. SQLite transactions already hold the database's write lock.
 */
export async function lockAccountTiers(trx: Transaction<Database>, accountId: number): Promise<void> {
  if (!(trx.getExecutor().adapter instanceof PostgresAdapter)) return;
  await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().execute();
}

/**
 * The tier rule, in one place: a customer is in the tier with the highest milestone at or below
 * their points earned, or in none.
 */
function tierOf(eb: ExpressionBuilder<Database, 'customers'>) {
  return eb
    .selectFrom('vip_tiers as tier')
    .select('tier.id')
    .whereRef('tier.account_id', '=', 'customers.account_id')
    .whereRef('tier.milestone', '<=', 'customers.points_earned')
    .orderBy('tier.milestone', 'desc')
    .limit(1);
}

/**
 * Puts every customer of the account in the tier their points earned give them (after a tier
 * changed), touching only those whose tier changes. Call inside the transaction of the change.
 */
export async function assignAccountTiers(trx: Transaction<Database>, accountId: number, now: number): Promise<void> {
  await tiersUpdate(trx, now).where('account_id', '=', accountId).execute();
}

/**
 * Puts one customer in the tier their points earned give them (after a ledger change, or as a
 * new customer): their new tier when it changed, undefined when they stay where they were. Call
 * inside the transaction of the change.
 */
export async function assignCustomerTier(
  trx: Transaction<Database>,
  customerId: number,
  now: number,
): Promise<{ vipTierId: number | null } | undefined> {
  const [row] = await assignCustomerTierQuery(trx, { customerId, now });
  return row && { vipTierId: row.vip_tier_id };
}

/** The UPDATE of the assignments, for the customers a WHERE added to it names. */
function tiersUpdate(db: Kysely<Database>, now: number) {
  return db
    .updateTable('customers')
    .set((eb) => ({ vip_tier_id: tierOf(eb), updated_at: now }))
    .where((eb) => eb('vip_tier_id', 'is distinct from', tierOf(eb)));
}

const assignCustomerTierQuery = compiledQuery((db, v: { customerId: number; now: number }) =>
  tiersUpdate(db, v.now).where('id', '=', v.customerId).returning('vip_tier_id'),
);

function toVipTier(row: VipTierRow): VipTier {
  return {
    id: row.id,
    name: row.name,
    image_url: row.image_url,
    milestone: row.milestone,
    perks: JSON.parse(row.perks) as { name: string }[],
    entry_rewards: [],
  };
}
