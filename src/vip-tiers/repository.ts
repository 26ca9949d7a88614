import { type ExpressionBuilder, type Kysely, PostgresAdapter } from 'kysely';
import { compiledQuery } from '../storage/compiled-query.js';
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
  db: Kysely<Database>,
  accountId: number,
  tier: VipTierInput,
  now: number,
): Promise<VipTier | undefined> {
  const row = await db
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
 * Changes the fields given; the tier, or undefined when there is no tier with this id. A
 * milestone another tier of the account has fails the unique constraint.
 */
export async function updateTier(
  db: Kysely<Database>,
  id: number,
  change: VipTierChange,
  now: number,
): Promise<VipTier | undefined> {
  const row = await db
    .updateTable('vip_tiers')
    .set({
      ...(change.name === undefined ? {} : { name: change.name }),
      ...(change.milestone === undefined ? {} : { milestone: change.milestone }),
      ...(change.image_url === undefined ? {} : { image_url: change.image_url }),
      ...(change.perks === undefined ? {} : { perks: JSON.stringify(change.perks) }),
      updated_at: now,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return row && toVipTier(row);
}

/** Deletes a tier (customers in it are left for `assignTiers` to place). */
export async function deleteTier(db: Kysely<Database>, id: number): Promise<void> {
  await db.deleteFrom('vip_tiers').where('id', '=', id).execute();
}

/**
 * Serialises changes to one account's tiers (call first in their transaction): two changes
 * placing the same customers at once could otherwise lock them in different orders and deadlock
 * on PostgreSQL. SQLite transactions already hold the database's write lock.
 */
export async function lockAccountTiers(db: Kysely<Database>, accountId: number): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await db.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().execute();
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
 * The same rule for a customer who has earned `points` (a new customer: 0), as a subquery to
 * write into an INSERT: no statement of its own.
 */
export function tierForPoints(db: Kysely<Database>, accountId: number, points: number) {
  return db
    .selectFrom('vip_tiers')
    .select('id')
    .where('account_id', '=', accountId)
    .where('milestone', '<=', points)
    .orderBy('milestone', 'desc')
    .limit(1);
}

/**
 * Puts customers in the tier their points earned give them, touching only those whose tier
 * changes: every customer of the account (after a tier changed), or one (after a ledger change).
 * Call inside the transaction of the change.
 */
export async function assignTiers(
  db: Kysely<Database>,
  who: { accountId: number } | { customerId: number },
  now: number,
): Promise<void> {
  if ('customerId' in who) {
    await assignCustomerTierQuery(db, { customerId: who.customerId, now });
    return;
  }
  await tiersUpdate(db, now).where('account_id', '=', who.accountId).execute();
}

/** The UPDATE of assignTiers, for the customers a WHERE added to it names. */
function tiersUpdate(db: Kysely<Database>, now: number) {
  return db
    .updateTable('customers')
    .set((eb) => ({ vip_tier_id: tierOf(eb), updated_at: now }))
    .where((eb) => eb('vip_tier_id', 'is distinct from', tierOf(eb)));
}

const assignCustomerTierQuery = compiledQuery((db, v: { customerId: number; now: number }) =>
  tiersUpdate(db, v.now).where('id', '=', v.customerId),
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
