import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import type { CustomersService } from '../customers/service.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import type { EventsService } from '../events/service.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { PointsSettings } from '../points-settings/schemas.js';
import type { PointsSettingsService } from '../points-settings/service.js';
import { insufficientPoints, type PointsTransactionsService } from '../points-transactions/service.js';
import type { RewardFulfillmentsService } from '../reward-fulfillments/service.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import {
  countPurchases,
  deleteProduct,
  findProduct,
  findProductsPage,
  insertProducts,
  insertPurchase,
  listProducts,
  lockProduct,
  type StoredProduct,
  updateProduct,
  updateProductEnabled,
} from './repository.js';
import {
  type PointsProduct,
  PointsProductInput,
  PointsProductInputList,
  type PointsProductsPage,
  type PointsProductsQuery,
  type PointsPurchase,
  type PurchaseBody,
} from './schemas.js';

const POINTS_PRODUCTS_CURSOR = { resource: 'points_products', filtered: true };

/** A product as the CLI shows it: the API form and whether it is listed. */
export type StoredPointsProduct = PointsProduct & { enabled: boolean };

/**
 * Points products: rewards for sale for points. A purchase spends the points, records the
 * purchase and has reward-fulfillments issue the reward (a code), all in one transaction.
 */
export class PointsProductsService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
    private readonly pointsSettings: PointsSettingsService,
    private readonly customers: CustomersService,
    private readonly ledger: PointsTransactionsService,
    private readonly rewardFulfillments: RewardFulfillmentsService,
    private readonly events: EventsService,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /** Creates one product (an object) or many (an array), all or nothing. */
  async create(accountId: number, input: unknown): Promise<StoredPointsProduct | StoredPointsProduct[]> {
    const many = Array.isArray(input);
    const root = many ? 'points_products' : 'points_product';
    const products = many ? validate(PointsProductInputList, input, root) : [validate(PointsProductInput, input, root)];
    for (const [i, product] of products.entries()) checkSteps(product, many ? `${root}.${i}` : root);
    await this.accounts.require(accountId);
    const created = await this.uow.run((w) => insertProducts(w.trx, accountId, products, w.now));
    const labels = await this.pointsSettings.get(accountId);
    const shown = created.map((stored) => ({
      ...toPointsProduct(stored, labels),
      enabled: stored.product.enabled === 1,
    }));
    return many ? shown : shown[0]!;
  }

  /** One page of the account's enabled products, id descending, of one exchange type if asked. */
  async page(accountId: number, query: PointsProductsQuery): Promise<PointsProductsPage> {
    const [page, labels] = await Promise.all([
      keysetPage({
        codec: await this.cursors.codec(POINTS_PRODUCTS_CURSOR),
        accountId,
        limit: query.limit ?? DEFAULT_LIMIT,
        cursor: query.cursor,
        filters: query.exchange_type === undefined ? {} : { exchangeType: query.exchange_type },
        fetch: async (direction, boundary, rows) =>
          (await findProductsPage(this.db, accountId, query.exchange_type, direction, boundary, rows)).map((p) => ({
            id: p.product.id,
            stored: p,
          })),
      }),
      this.pointsSettings.get(accountId),
    ]);
    return { points_products: page.items.map((item) => toPointsProduct(item.stored, labels)), metadata: page.metadata };
  }

  /** The account's enabled product; `404` for an id it does not have or a disabled product. */
  async get(accountId: number, id: number): Promise<PointsProduct> {
    const stored = await findProduct(this.db, id, accountId);
    if (stored?.product.enabled !== 1) throw notFound(`points product ${id} does not exist`);
    return toPointsProduct(stored, await this.pointsSettings.get(accountId));
  }

  /** Every product of the account, enabled or not, newest first (the CLI's list). */
  async listAll(accountId: number): Promise<StoredPointsProduct[]> {
    await this.accounts.require(accountId);
    const labels = await this.pointsSettings.get(accountId);
    return (await listProducts(this.db, accountId)).map((stored) => ({
      ...toPointsProduct(stored, labels),
      enabled: stored.product.enabled === 1,
    }));
  }

  /** Lists and sells a product (`true`) or withdraws it (`false`); `404` for an unknown id. */
  async setEnabled(id: number, enabled: boolean): Promise<StoredPointsProduct> {
    if (!(await this.uow.run(({ trx, now }) => updateProductEnabled(trx, id, enabled, now)))) {
      throw notFound(`points product ${id} does not exist`);
    }
    const stored = (await findProduct(this.db, id))!;
    return {
      ...toPointsProduct(stored, await this.pointsSettings.get(stored.product.account_id)),
      enabled: stored.product.enabled === 1,
    };
  }

  /**
   * Replaces the account's product's reward and price with `input` (what `create` takes for one
   * product; `enabled` left out is true); `404` for an id the account does not have. Purchases
   * made before keep the points they spent and the codes they were issued.
   */
  async update(accountId: number, id: number, input: unknown): Promise<StoredPointsProduct> {
    const product = validate(PointsProductInput, input, 'points_product');
    checkSteps(product, 'points_product');
    const found = await this.uow.run((w) => updateProduct(w.trx, accountId, id, product, w.now));
    if (!found) throw notFound(`points product ${id} does not exist`);
    const stored = (await findProduct(this.db, id, accountId))!;
    return {
      ...toPointsProduct(stored, await this.pointsSettings.get(accountId)),
      enabled: stored.product.enabled === 1,
    };
  }

  /** How many times the account's product was bought; `404` for an id the account does not have. */
  async purchaseCount(accountId: number, id: number): Promise<number> {
    if (!(await findProduct(this.db, id, accountId))) throw notFound(`points product ${id} does not exist`);
    return countPurchases(this.db, id);
  }

  /**
   * Deletes a product that was never bought, with its reward. One that was is refused
   * (`invalid_request`): its purchases and the codes they issued name it, and deleting it would
   * delete them. Disabling withdraws it instead. The product is locked while its purchases are
   * counted, so a purchase racing the deletion either comes first (and refuses it) or fails.
   */
  async delete(accountId: number, id: number): Promise<void> {
    await this.uow.run(async ({ trx }) => {
      const product = await lockProduct(trx, id, accountId);
      if (!product) throw notFound(`points product ${id} does not exist`);
      const bought = await countPurchases(trx, id);
      if (bought > 0) {
        throw new DomainError(
          'invalid_request',
          `points product ${id} was bought ${bought === 1 ? 'once' : `${bought} times`}: it cannot be deleted, ` +
            'because its purchases and the reward codes they issued refer to it. Disable it instead: it is then ' +
            'neither listed nor sold.',
        );
      }
      await deleteProduct(trx, product);
    });
  }

  /** A purchase in a transaction of its own, without an `Idempotency-Key` (see purchaseIn). */
  purchase(accountId: number, productId: number, body: PurchaseBody): Promise<PointsPurchase> {
    return this.uow.run((w) => this.purchaseIn(w, accountId, productId, body));
  }

  /**
   * A purchase of the account's product, in `w`: a points transaction of `-points`, the purchase,
   * and the reward's fulfillment with a new code. Refused before anything is written when the
   * customer is not a member or short of points. The route runs it under its `Idempotency-Key`.
   * Its events, in the order of the changes: `points_transaction.created`,
   * `reward_fulfillment.created`, then `points_purchase.created` with the fulfillment.
   */
  async purchaseIn(w: Work, accountId: number, productId: number, body: PurchaseBody): Promise<PointsPurchase> {
    const stored = await findProduct(w.trx, productId, accountId);
    if (stored?.product.enabled !== 1) throw notFound(`points product ${productId} does not exist`);
    const { product, reward } = stored;
    const points = pointsToSpend(stored, body.points_to_spend);
    const customer = await this.customers.lock(w, accountId, body.customer_id);
    if (!customer) throw invalidParameter('customer_id', 'names no customer of this account');
    if (customer.state !== 'member') {
      throw new DomainError(
        'customer_not_member',
        `customer ${customer.id} is ${customer.state}: only members spend points`,
      );
    }
    // Refused before anything is written (the ledger would refuse it too).
    if (customer.pointsBalance < points) throw insufficientPoints(customer, -points);
    const purchase = await insertPurchase(w.trx, {
      account_id: accountId,
      customer_id: customer.id,
      points_product_id: product.id,
      points_spent: points,
      created_at: w.now,
      updated_at: w.now,
    });
    const entry = {
      pointsChange: -points,
      description: reward.name,
      internalNote: null,
      pointsPurchaseId: purchase.id,
    };
    await this.ledger.post(w, customer, entry);
    const fulfillment = await this.rewardFulfillments.issue(w, {
      accountId,
      customerId: customer.id,
      pointsPurchaseId: purchase.id,
      reward: { name: reward.name, imageUrl: reward.image_url },
      expiresAfterDays: product.expires_after_days,
    });
    const bought: PointsPurchase = {
      id: purchase.id,
      customer_id: purchase.customer_id,
      points_product_id: purchase.points_product_id,
      points_spent: purchase.points_spent,
      reward_fulfillment: fulfillment,
      created_at: isoTime(purchase.created_at),
      updated_at: isoTime(purchase.updated_at),
    };
    this.events.record(w, accountId, 'points_purchase.created', { points_purchase: bought });
    return bought;
  }
}

/** The points a purchase spends: the price of a fixed product, or a valid `points_to_spend`. */
function pointsToSpend({ product }: StoredProduct, requested: number | undefined): number {
  if (product.exchange_type === 'fixed') {
    if (requested !== undefined) {
      throw invalidParameter('points_to_spend', 'must be left out: this product has a fixed price');
    }
    return product.points_price!;
  }
  const step = product.variable_points_step!;
  const min = product.variable_points_min!;
  const max = product.variable_points_max!;
  if (requested === undefined) throw invalidParameter('points_to_spend', 'is required for a variable product');
  if (requested % step !== 0 || requested < min || requested > max) {
    throw invalidParameter('points_to_spend', `must be a multiple of ${step} from ${min} to ${max}`);
  }
  return requested;
}

/** A variable product's minimum and maximum are multiples of its step, the maximum at least the minimum. */
function checkSteps(product: PointsProductInput, root: string): void {
  if (product.exchange_type !== 'variable') return;
  const step = product.variable_points_step;
  for (const field of ['variable_points_min', 'variable_points_max'] as const) {
    if (product[field] % step !== 0)
      throw invalidParameter(`${root}.${field}`, `must be a multiple of variable_points_step (${step})`);
  }
  if (product.variable_points_max < product.variable_points_min) {
    throw invalidParameter(`${root}.variable_points_max`, 'must be at least variable_points_min');
  }
}

/** `n Points` in the account's labels (`one` for exactly 1). */
function pointsText(n: number, settings: PointsSettings): string {
  return `${n} ${n === 1 ? settings.points_label.one : settings.points_label.other}`;
}

function toPointsProduct({ product, reward }: StoredProduct, labels: PointsSettings): PointsProduct {
  const fixed = product.exchange_type === 'fixed';
  return {
    id: product.id,
    exchange_type: product.exchange_type,
    exchange_description: fixed
      ? pointsText(product.points_price!, labels)
      : `${product.variable_points_step_reward_value} off for every ${pointsText(product.variable_points_step!, labels)}`,
    points_price: product.points_price,
    variable_points_step: product.variable_points_step,
    variable_points_step_reward_value: product.variable_points_step_reward_value,
    variable_points_min: product.variable_points_min,
    variable_points_max: product.variable_points_max,
    expires_after_days: product.expires_after_days,
    reward: {
      id: reward.id,
      name: reward.name,
      description: reward.description,
      image_url: reward.image_url,
      created_at: isoTime(reward.created_at),
      updated_at: isoTime(reward.updated_at),
    },
    created_at: isoTime(product.created_at),
    updated_at: isoTime(product.updated_at),
  };
}
