import type { ExpressionBuilder, Kysely, Transaction } from 'kysely';
import { compiledQuery } from '../storage/compiled-query.js';
import { isPostgres } from '../storage/dialect.js';
import { isUniqueViolation } from '../storage/errors.js';
import type { Database, VipProgramType, VipTierRow } from '../storage/schema.js';
import { type DayEarning, type StoredPlacement, toStoredPlacement } from './periods.js';
import type { VipTier, VipTierInput, VipTierPatch } from './schemas.js';

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

/**
 * Whether the tier exists, locking it until the transaction ends (PostgreSQL; SQLite's writer
 * already holds the database). A write that just placed a customer in it holds the row's KEY
 * SHARE lock (its foreign key) until it commits: this waits for it, so that the members read next
 * include that customer, and later placements into the tier wait for this transaction.
 */
export async function lockTier(trx: Transaction<Database>, id: number): Promise<boolean> {
  const query = trx.selectFrom('vip_tiers').select('id').where('id', '=', id);
  return (await (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst()) !== undefined;
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
  change: VipTierPatch,
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

function updateTierQuery(trx: Transaction<Database>, id: number, change: VipTierPatch, now: number) {
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

/** Deletes a tier (move its customers out first: `findTierMembers`, then place them without it). */
export async function deleteTier(trx: Transaction<Database>, id: number): Promise<void> {
  await trx.deleteFrom('vip_tiers').where('id', '=', id).execute();
}

/**
 * Serialises changes to one account's tiers (call first in their transaction): two changes
 * placing the same customers at once could otherwise lock them in different orders and deadlock
 * on PostgreSQL. SQLite transactions already hold the database's write lock.
 */
export async function lockAccountTiers(trx: Transaction<Database>, accountId: number): Promise<void> {
  if (!isPostgres(trx)) return;
  // NO KEY UPDATE: it serialises the account's tier changes without holding back the inserts
  // whose foreign keys name the account (they take KEY SHARE, which FOR UPDATE would block).
  await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forNoKeyUpdate().execute();
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

/** A move between tiers, as written to `vip_tier_changes`. */
export interface StoredTierChange {
  readonly id: number;
  readonly customerId: number;
  readonly previousTierId: number | null;
  readonly currentTierId: number | null;
  readonly createdAt: number;
}

/** Writes one customer's move (after `assignCustomerTier` moved them). */
export async function insertTierChange(
  trx: Transaction<Database>,
  change: {
    accountId: number;
    customerId: number;
    previousTierId: number | null;
    currentTierId: number | null;
    now: number;
  },
): Promise<StoredTierChange> {
  const [row] = await insertTierChangeQuery(trx, change);
  return toStoredTierChange(row!);
}

const insertTierChangeQuery = compiledQuery(
  (
    db,
    v: {
      accountId: number;
      customerId: number;
      previousTierId: number | null;
      currentTierId: number | null;
      now: number;
    },
  ) =>
    db
      .insertInto('vip_tier_changes')
      .values({
        account_id: v.accountId,
        customer_id: v.customerId,
        previous_vip_tier_id: v.previousTierId,
        current_vip_tier_id: v.currentTierId,
        created_at: v.now,
      })
      .returning(['id', 'customer_id', 'previous_vip_tier_id', 'current_vip_tier_id', 'created_at']),
);

/** insertTierChange for many customers in one statement, in their order. */
export async function insertTierChanges(
  trx: Transaction<Database>,
  changes: readonly {
    accountId: number;
    customerId: number;
    previousTierId: number | null;
    currentTierId: number | null;
    now: number;
  }[],
): Promise<StoredTierChange[]> {
  if (changes.length === 0) return [];
  const rows = await trx
    .insertInto('vip_tier_changes')
    .values(
      changes.map((v) => ({
        account_id: v.accountId,
        customer_id: v.customerId,
        previous_vip_tier_id: v.previousTierId,
        current_vip_tier_id: v.currentTierId,
        created_at: v.now,
      })),
    )
    .returning(['id', 'customer_id', 'previous_vip_tier_id', 'current_vip_tier_id', 'created_at'])
    .execute();
  return rows.map(toStoredTierChange).sort((a, b) => a.id - b.id);
}

function toStoredTierChange(row: {
  id: number;
  customer_id: number;
  previous_vip_tier_id: number | null;
  current_vip_tier_id: number | null;
  created_at: number;
}): StoredTierChange {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    previousTierId: row.previous_vip_tier_id === null ? null : Number(row.previous_vip_tier_id),
    currentTierId: row.current_vip_tier_id === null ? null : Number(row.current_vip_tier_id),
    createdAt: Number(row.created_at),
  };
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

/** assignCustomerTier for many customers in one statement: those it moved, with their new tier. */
export async function assignCustomersTiers(
  trx: Transaction<Database>,
  customerIds: readonly number[],
  now: number,
): Promise<Map<number, number | null>> {
  if (customerIds.length === 0) return new Map();
  const rows = await tiersUpdate(trx, now).where('id', 'in', customerIds).returning(['id', 'vip_tier_id']).execute();
  return new Map(rows.map((row) => [Number(row.id), row.vip_tier_id === null ? null : Number(row.vip_tier_id)]));
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

/**
 * The account's VIP program: its type, the version of that type, and its tiers (ascending
 * milestone); with the account's points expiry (days of inactivity, null: never), which every
 * customer shown beside their tier is told, so that a write reads both in one statement.
 */
export interface StoredProgram {
  readonly type: VipProgramType;
  readonly version: number;
  readonly tiers: VipTier[];
  readonly pointsExpiryDays: number | null;
}

/** The account's program, tiers and points expiry in one statement; undefined for an unknown account. */
export async function findProgram(db: Kysely<Database>, accountId: number): Promise<StoredProgram | undefined> {
  const rows = await findProgramQuery(db, { accountId });
  const first = rows[0];
  if (!first) return undefined;
  const tiers = rows.flatMap((row) =>
    row.id === null
      ? []
      : [
          toVipTier({
            id: row.id,
            account_id: accountId,
            name: row.name!,
            image_url: row.image_url!,
            milestone: row.milestone!,
            perks: row.perks!,
            created_at: 0,
            updated_at: 0,
          }),
        ],
  );
  return {
    type: first.vip_program,
    version: Number(first.vip_program_version),
    tiers,
    pointsExpiryDays: first.expiry_inactivity_days === null ? null : Number(first.expiry_inactivity_days),
  };
}

const findProgramQuery = compiledQuery((db, v: { accountId: number }) =>
  db
    .selectFrom('accounts')
    .leftJoin('vip_tiers', 'vip_tiers.account_id', 'accounts.id')
    .leftJoin('points_settings', 'points_settings.account_id', 'accounts.id')
    .select([
      'accounts.vip_program',
      'accounts.vip_program_version',
      'points_settings.expiry_inactivity_days',
      'vip_tiers.id',
      'vip_tiers.name',
      'vip_tiers.image_url',
      'vip_tiers.milestone',
      'vip_tiers.perks',
    ])
    .where('accounts.id', '=', v.accountId)
    .orderBy('vip_tiers.milestone'),
);

/**
 * Sets the account's program type; its new version, or undefined when it already had this type
 * (nothing written).
 */
export async function updateProgramType(
  trx: Transaction<Database>,
  accountId: number,
  type: VipProgramType,
): Promise<number | undefined> {
  const row = await trx
    .updateTable('accounts')
    .set((eb) => ({ vip_program: type, vip_program_version: eb('vip_program_version', '+', 1) }))
    .where('id', '=', accountId)
    .where('vip_program', '<>', type)
    .returning('vip_program_version')
    .executeTakeFirst();
  return row && Number(row.vip_program_version);
}

/**
 * Raises the account's program version (its tiers changed): every customer is due to be placed
 * again for the new one. Answers the new version.
 */
export async function raiseProgramVersion(trx: Transaction<Database>, accountId: number): Promise<number> {
  const row = await trx
    .updateTable('accounts')
    .set((eb) => ({ vip_program_version: eb('vip_program_version', '+', 1) }))
    .where('id', '=', accountId)
    .returning('vip_program_version')
    .executeTakeFirstOrThrow();
  return Number(row.vip_program_version);
}

/**
 * Records that every customer of the account is placed for `version`, unless the program changed
 * again meanwhile (a newer version is not placed yet).
 */
export async function markPlaced(trx: Transaction<Database>, accountId: number, version: number): Promise<void> {
  await trx
    .updateTable('accounts')
    .set({ vip_placed_version: version })
    .where('id', '=', accountId)
    .where('vip_program_version', '=', version)
    .where('vip_placed_version', '<>', version)
    .execute();
}

/** Up to `limit` ids of the tier's customers, ascending (through customers_vip_tier). */
export async function findTierMembers(db: Kysely<Database>, tierId: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('customers')
    .select('id')
    .where('vip_tier_id', '=', tierId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => Number(row.id));
}

/**
 * Writes an all-time placement for these customers in one statement: in `vipTierId`, the period
 * columns cleared, placed for `version`, their updated_at moved (their tier or shown placement
 * changed).
 */
export async function storeAllTimePlacements(
  trx: Transaction<Database>,
  customerIds: readonly number[],
  placement: { vipTierId: number | null; version: number },
  now: number,
): Promise<void> {
  if (customerIds.length === 0) return;
  await trx
    .updateTable('customers')
    .set({
      vip_tier_id: placement.vipTierId,
      vip_progress: 0,
      vip_tier_expires_at: null,
      vip_period_end: null,
      vip_retain_delta: null,
      vip_recheck_at: null,
      vip_program_version: placement.version,
      updated_at: now,
    })
    .where('id', 'in', customerIds)
    .execute();
}

/** Records that these customers are placed for `version` with no other change (their updated_at stays). */
export async function storePlacementVersion(
  trx: Transaction<Database>,
  customerIds: readonly number[],
  version: number,
): Promise<void> {
  if (customerIds.length === 0) return;
  await trx.updateTable('customers').set({ vip_program_version: version }).where('id', 'in', customerIds).execute();
}

/** The earnings of these customers from `fromDay` on, by customer, ascending day. */
export async function findEarnings(
  db: Kysely<Database>,
  customerIds: readonly number[],
  fromDay: number,
): Promise<Map<number, DayEarning[]>> {
  const byCustomer = new Map<number, DayEarning[]>();
  if (customerIds.length === 0) return byCustomer;
  const rows =
    customerIds.length === 1
      ? await findOneEarningsQuery(db, { customerId: customerIds[0]!, fromDay })
      : await db
          .selectFrom('vip_earnings')
          .select(['customer_id', 'day', 'points'])
          .where('customer_id', 'in', customerIds)
          .where('day', '>=', fromDay)
          .orderBy('customer_id')
          .orderBy('day')
          .execute();
  for (const row of rows) {
    const id = Number(row.customer_id);
    const list = byCustomer.get(id) ?? [];
    if (list.length === 0) byCustomer.set(id, list);
    list.push({ day: Number(row.day), points: Number(row.points) });
  }
  return byCustomer;
}

const findOneEarningsQuery = compiledQuery((db, v: { customerId: number; fromDay: number }) =>
  db
    .selectFrom('vip_earnings')
    .select(['customer_id', 'day', 'points'])
    .where('customer_id', '=', v.customerId)
    .where('day', '>=', v.fromDay)
    .orderBy('day'),
);

/** Writes a customer's placement; `touch`: their updated_at moves to `now` too (the job's changes). */
export async function storePlacement(
  trx: Transaction<Database>,
  customerId: number,
  placement: StoredPlacement,
  now: number | null,
): Promise<void> {
  await storePlacementQuery(trx, { customerId, ...placement, now });
}

const storePlacementQuery = compiledQuery(
  (db, v: { [K in keyof StoredPlacement]: StoredPlacement[K] } & { customerId: number; now: number | null }) =>
    db
      .updateTable('customers')
      .set((eb) => ({
        vip_tier_id: v.vipTierId,
        vip_progress: v.vipProgress,
        vip_tier_expires_at: v.vipTierExpiresAt,
        vip_period_end: v.vipPeriodEnd,
        vip_retain_delta: v.vipRetainDelta,
        vip_recheck_at: v.vipRecheckAt,
        vip_program_version: v.vipProgramVersion,
        updated_at: eb.fn.coalesce(eb.val(v.now), eb.ref('updated_at')),
      }))
      .where('id', '=', v.customerId),
);

/** How many of the account's customers were placed for another program version (still to place again). */
export async function countCustomersToPlace(db: Kysely<Database>, accountId: number, version: number) {
  const row = await db
    .selectFrom('customers')
    .select((eb) => [
      eb.fn.countAll<number>().as('total'),
      eb.fn.sum<number>(eb.case().when('vip_program_version', '<>', version).then(1).else(0).end()).as('waiting'),
    ])
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return { total: Number(row.total), waiting: Number(row.waiting ?? 0) };
}

/**
 * Accounts the periods job looks at: those whose program is a period one, and those whose last
 * placement did not finish (customers placed for an older version may be left there).
 */
export async function findPeriodAccounts(db: Kysely<Database>): Promise<{ accountId: number; version: number }[]> {
  const rows = await db
    .selectFrom('accounts')
    .select(['id', 'vip_program_version'])
    .where((eb) =>
      eb.or([eb('vip_program', '<>', 'all_time'), eb('vip_placed_version', '<>', eb.ref('vip_program_version'))]),
    )
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ accountId: Number(row.id), version: Number(row.vip_program_version) }));
}

/**
 * Up to `limit` of the account's customer ids after `after`, ascending; with `due`, only those whose
 * placement is due: made for another program version, or changed by time by `due.now`. Read
 * through the (account_id, id) index: the vip_ columns have none (see the migration
 * 2026-11-27T1300-vip-periods).
 */
export async function findCustomerIds(
  db: Kysely<Database>,
  accountId: number,
  after: number,
  limit: number,
  due?: { version: number; now: number },
): Promise<number[]> {
  const rows = await db
    .selectFrom('customers')
    .select('id')
    .where('account_id', '=', accountId)
    .where('id', '>', after)
    .$if(due !== undefined, (q) =>
      q.where((eb) => eb.or([eb('vip_program_version', '<>', due!.version), eb('vip_recheck_at', '<=', due!.now)])),
    )
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => Number(row.id));
}

/** A customer's placement and what an all-time program places them by, locked until the transaction ends. */
export interface LockedPlacement extends StoredPlacement {
  readonly id: number;
  readonly pointsEarned: number;
}

/** These customers of the account, locked (PostgreSQL `FOR UPDATE`), ascending id. */
export async function lockPlacements(
  trx: Transaction<Database>,
  accountId: number,
  ids: readonly number[],
): Promise<LockedPlacement[]> {
  if (ids.length === 0) return [];
  const rows = await trx
    .selectFrom('customers')
    .select([
      'id',
      'points_earned',
      'vip_tier_id',
      'vip_progress',
      'vip_tier_expires_at',
      'vip_period_end',
      'vip_retain_delta',
      'vip_recheck_at',
      'vip_program_version',
    ])
    .where('account_id', '=', accountId)
    .where('id', 'in', ids)
    .orderBy('id')
    .$if(isPostgres(trx), (q) => q.forUpdate())
    .execute();
  return rows.map((row) => ({
    id: Number(row.id),
    pointsEarned: Number(row.points_earned),
    ...toStoredPlacement(row),
  }));
}

/** Adds points to customers' earnings of one day (what the ledger's trigger does for a credit), one statement. */
export async function addEarnings(
  trx: Transaction<Database>,
  day: number,
  earnings: readonly { customerId: number; points: number }[],
) {
  if (earnings.length === 0) return;
  await trx
    .insertInto('vip_earnings')
    .values(earnings.map(({ customerId, points }) => ({ customer_id: customerId, day, points })))
    .onConflict((oc) =>
      oc
        .columns(['customer_id', 'day'])
        .doUpdateSet((eb) => ({ points: eb('vip_earnings.points', '+', eb.ref('excluded.points')) })),
    )
    .execute();
}
