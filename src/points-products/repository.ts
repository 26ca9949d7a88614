import type { Kysely, Transaction } from 'kysely';
import type { Direction } from '../pagination/cursor.js';
import { compiledQuery, pick } from '../storage/compiled-query.js';
import { isPostgres } from '../storage/dialect.js';
import type { Database, PointsProductRow, PointsPurchaseRow, RewardRow } from '../storage/schema.js';
import type { PointsProductInput } from './schemas.js';

/** A product as stored, with its reward: what the service turns into the API form. */
export interface StoredProduct {
  product: PointsProductRow;
  reward: RewardRow;
}

const PRODUCT_COLUMNS = [
  'points_products.id',
  'points_products.account_id',
  'points_products.reward_id',
  'points_products.enabled',
  'points_products.exchange_type',
  'points_products.points_price',
  'points_products.variable_points_step',
  'points_products.variable_points_step_reward_value',
  'points_products.variable_points_min',
  'points_products.variable_points_max',
  'points_products.expires_after_days',
  'points_products.created_at',
  'points_products.updated_at',
] as const;

/** Products joined with their rewards (reward columns prefixed `reward_`). */
function withRewards(db: Kysely<Database>) {
  return db
    .selectFrom('points_products')
    .innerJoin('rewards', 'rewards.id', 'points_products.reward_id')
    .select(PRODUCT_COLUMNS)
    .select([
      'rewards.name as reward_name',
      'rewards.description as reward_description',
      'rewards.image_url as reward_image_url',
      'rewards.created_at as reward_created_at',
      'rewards.updated_at as reward_updated_at',
    ]);
}

type JoinedRow = PointsProductRow & {
  reward_name: string;
  reward_description: string;
  reward_image_url: string;
  reward_created_at: number;
  reward_updated_at: number;
};

function split(row: JoinedRow): StoredProduct {
  const { reward_name, reward_description, reward_image_url, reward_created_at, reward_updated_at, ...product } = row;
  return {
    product,
    reward: {
      id: product.reward_id,
      account_id: product.account_id,
      name: reward_name,
      description: reward_description,
      image_url: reward_image_url,
      created_at: reward_created_at,
      updated_at: reward_updated_at,
    },
  };
}

/** Inserts products with their rewards; in input order. */
export async function insertProducts(
  trx: Transaction<Database>,
  accountId: number,
  products: PointsProductInput[],
  now: number,
): Promise<StoredProduct[]> {
  const created: StoredProduct[] = [];
  for (const input of products) {
    const reward = await trx
      .insertInto('rewards')
      .values({
        account_id: accountId,
        name: input.reward.name,
        description: input.reward.description ?? '',
        image_url: input.reward.image_url ?? '',
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const product = await trx
      .insertInto('points_products')
      .values({
        account_id: accountId,
        reward_id: reward.id,
        ...exchangeColumns(input),
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    created.push({ product, reward });
  }
  return created;
}

/** A product by id, with its reward; `accountId` limits it to one account. */
export async function findProduct(
  db: Kysely<Database>,
  id: number,
  accountId?: number,
): Promise<StoredProduct | undefined> {
  const [row] =
    accountId === undefined
      ? await withRewards(db).where('points_products.id', '=', id).execute()
      : await accountProductQuery(db, { id, accountId });
  return row && split(row as JoinedRow);
}

const accountProductQuery = compiledQuery((db, v: { id: number; accountId: number }) =>
  withRewards(db).where('points_products.id', '=', v.id).where('points_products.account_id', '=', v.accountId),
);

/** Up to `rows` of the account's enabled products (of one exchange type), beyond `boundary`. */
export async function findProductsPage(
  db: Kysely<Database>,
  accountId: number,
  exchangeType: 'fixed' | 'variable' | undefined,
  direction: Direction,
  boundary: number | null,
  rows: number,
): Promise<StoredProduct[]> {
  const found = await withRewards(db)
    .where('points_products.account_id', '=', accountId)
    .where('points_products.enabled', '=', 1)
    .$if(exchangeType !== undefined, (q) => q.where('points_products.exchange_type', '=', exchangeType!))
    .$if(boundary !== null, (q) => q.where('points_products.id', direction === 'next' ? '<' : '>', boundary!))
    .orderBy('points_products.id', direction === 'next' ? 'desc' : 'asc')
    .limit(rows)
    .execute();
  return found.map((row) => split(row as JoinedRow));
}

/** Every product of the account, enabled or not, newest first (the CLI's list). */
export async function listProducts(db: Kysely<Database>, accountId: number): Promise<StoredProduct[]> {
  const found = await withRewards(db)
    .where('points_products.account_id', '=', accountId)
    .orderBy('points_products.id', 'desc')
    .execute();
  return found.map((row) => split(row as JoinedRow));
}

/** Sets `enabled`; false when no product has this id. */
export async function updateProductEnabled(db: Kysely<Database>, id: number, enabled: boolean, now: number) {
  const result = await db
    .updateTable('points_products')
    .set({ enabled: enabled ? 1 : 0, updated_at: now })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Replaces a product's reward and price; false when the account has no product with this id.
 */
export async function updateProduct(
  trx: Transaction<Database>,
  accountId: number,
  id: number,
  input: PointsProductInput,
  now: number,
): Promise<boolean> {
  const stored = await findProduct(trx, id, accountId);
  if (!stored) return false;
  await trx
    .updateTable('rewards')
    .set({
      name: input.reward.name,
      description: input.reward.description ?? '',
      image_url: input.reward.image_url ?? '',
      updated_at: now,
    })
    .where('id', '=', stored.reward.id)
    .execute();
  await trx
    .updateTable('points_products')
    .set({
      ...exchangeColumns(input),
      updated_at: now,
    })
    .where('id', '=', id)
    .execute();
  return true;
}

/**
 * The account's product, locked until the transaction ends (PostgreSQL; SQLite's write lock
 * already serialises writers): a purchase inserting a row that references it waits, so a count of
 * its purchases stays true until the product is deleted.
 */
export async function lockProduct(
  trx: Transaction<Database>,
  id: number,
  accountId: number,
): Promise<PointsProductRow | undefined> {
  return trx
    .selectFrom('points_products')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .$if(isPostgres(trx), (query) => query.forUpdate())
    .executeTakeFirst();
}

/** How many times a product was bought. */
export async function countPurchases(db: Kysely<Database>, productId: number): Promise<number> {
  const row = await db
    .selectFrom('points_purchases')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('points_product_id', '=', productId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Deletes a product and its reward (after `lockProduct`, in its transaction). */
export async function deleteProduct(trx: Transaction<Database>, product: PointsProductRow): Promise<void> {
  await trx.deleteFrom('points_products').where('id', '=', product.id).execute();
  await trx.deleteFrom('rewards').where('id', '=', product.reward_id).execute();
}

/** Records a purchase (in the transaction that spends its points and issues its reward). */
export async function insertPurchase(
  trx: Transaction<Database>,
  purchase: Omit<PointsPurchaseRow, 'id'>,
): Promise<PointsPurchaseRow> {
  const [row] = await insertPurchaseQuery(trx, purchase);
  if (!row) throw new Error('the points purchase was not inserted');
  return row;
}

const insertPurchaseQuery = compiledQuery((db, v: Omit<PointsPurchaseRow, 'id'>) =>
  db
    .insertInto('points_purchases')
    .values(pick(v, ['account_id', 'customer_id', 'points_product_id', 'points_spent', 'created_at', 'updated_at']))
    .returningAll(),
);

/** The columns of a product's exchange: a fixed price, or the variable one's step and bounds. */
function exchangeColumns(input: PointsProductInput) {
  const variable = input.exchange_type === 'variable' ? input : null;
  return {
    enabled: input.enabled === false ? 0 : 1,
    exchange_type: input.exchange_type,
    points_price: input.exchange_type === 'fixed' ? input.points_price : null,
    variable_points_step: variable?.variable_points_step ?? null,
    variable_points_step_reward_value: variable?.variable_points_step_reward_value ?? null,
    variable_points_min: variable?.variable_points_min ?? null,
    variable_points_max: variable?.variable_points_max ?? null,
    expires_after_days: input.expires_after_days ?? null,
  };
}
