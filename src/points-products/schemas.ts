import { type Static, Type } from 'typebox';
import { byConstant, HttpUrl, Id, NO_NUL, NullableInteger, StringEnum, Text } from '../common-schemas.js';
import { MAX_POINTS_PER_CREDIT } from '../earning-rules/schemas.js';
import { PageMetadata, pageParams } from '../pagination/schemas.js';
import { RewardFulfillment } from '../reward-fulfillments/schemas.js';

/** What a purchase issues (the reference's Reward). */
export const Reward = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the reward' }),
    name: Type.String({ description: 'Name of the reward, such as "$5 off"' }),
    description: Type.String({ description: 'What the reward is; "" when not given' }),
    image_url: Type.String({ description: 'Image of the reward; "" when it has none' }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  {
    $id: 'Reward',
    description: 'What a points purchase issues',
    examples: [
      {
        id: 4,
        name: '$5 off coupon',
        description: '$5 off your next order',
        image_url: 'https://cdn.example.com/rewards/5-off.png',
        created_at: '2026-01-02T10:00:00.000Z',
        updated_at: '2026-01-02T10:00:00.000Z',
      },
    ],
  },
);
export type Reward = Static<typeof Reward>;

/**
 * A reward for sale for points (the reference's PointsProduct), flat: the serialiser writes every
 * product with this one schema, without picking a union branch per item. The document describes
 * it as the union of its two exchange types instead (`x-variants`, rewritten in http/openapi.ts),
 * so that a generated client narrows on `exchange_type`: the same keys, only the types differ.
 */
export const PointsProduct = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the points product' }),
    exchange_type: StringEnum(
      ['fixed', 'variable'],
      '`fixed`: one price; `variable`: the customer chooses how many points to spend, in steps',
    ),
    exchange_description: Type.String({
      description: "How points are exchanged for the reward, in the account's points labels",
    }),
    points_price: NullableInteger('The price in points (fixed only; otherwise null)'),
    variable_points_step: NullableInteger('Points per step (variable only)'),
    variable_points_step_reward_value: NullableInteger('Reward value per step (variable only)'),
    variable_points_min: NullableInteger('Fewest points to spend (variable only)'),
    variable_points_max: NullableInteger('Most points to spend (variable only)'),
    expires_after_days: NullableInteger(
      "Days a code it issues can be used (its fulfillment's `expires_at`); null: the codes never expire",
    ),
    reward: Reward,
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  {
    $id: 'PointsProduct',
    description: 'A reward for sale for points, at one price (`fixed`) or in steps (`variable`)',
    'x-variants': {
      by: 'exchange_type',
      variants: {
        fixed: {
          name: 'FixedPointsProduct',
          fields: ['points_price'],
          description: 'A points product at one price: `points_price` is set, the `variable_*` fields are null',
        },
        variable: {
          name: 'VariablePointsProduct',
          fields: [
            'variable_points_step',
            'variable_points_step_reward_value',
            'variable_points_min',
            'variable_points_max',
          ],
          description: 'A points product bought in steps: the `variable_*` fields are set, `points_price` is null',
        },
      },
    },
    examples: [
      {
        id: 4,
        exchange_type: 'fixed',
        exchange_description: '100 Points',
        points_price: 100,
        variable_points_step: null,
        variable_points_step_reward_value: null,
        variable_points_min: null,
        variable_points_max: null,
        expires_after_days: 90,
        reward: {
          id: 4,
          name: '$5 off coupon',
          description: '$5 off your next order',
          image_url: 'https://cdn.example.com/rewards/5-off.png',
          created_at: '2026-01-02T10:00:00.000Z',
          updated_at: '2026-01-02T10:00:00.000Z',
        },
        created_at: '2026-01-02T10:00:00.000Z',
        updated_at: '2026-01-02T10:00:00.000Z',
      },
    ],
  },
);
export type PointsProduct = Static<typeof PointsProduct>;

export const PointsProductResponse = Type.Object({ points_product: PointsProduct });

export const PointsProductsPage = Type.Object(
  { points_products: Type.Array(PointsProduct), metadata: PageMetadata },
  { description: 'A page of the enabled points products, id descending' },
);
export type PointsProductsPage = Static<typeof PointsProductsPage>;

export const ExchangeType = StringEnum(['fixed', 'variable']);

export const PointsProductsQuery = Type.Object({
  ...pageParams('points products'),
  exchange_type: Type.Optional({ ...ExchangeType, description: 'Only the products of this exchange type' }),
});
export type PointsProductsQuery = Static<typeof PointsProductsQuery>;

export const PointsProductParams = Type.Object({ id: Id('Identifier of the points product') });

const points = (description: string) => Type.Integer({ minimum: 1, maximum: MAX_POINTS_PER_CREDIT, description });

const RewardInput = Type.Object(
  {
    name: Text('Name of the reward, such as "$5 off"'),
    description: Type.Optional(Type.String({ maxLength: 1000, pattern: NO_NUL, description: 'What the reward is' })),
    image_url: Type.Optional(Type.Union([HttpUrl('Image of the reward'), Type.Literal('')])),
  },
  { additionalProperties: false },
);

const common = {
  reward: RewardInput,
  expires_after_days: Type.Optional(
    Type.Union(
      [
        Type.Integer({
          minimum: 1,
          maximum: 3650,
          description: 'Days a code it issues can be used, 1 to 3,650; null or left out: forever',
        }),
        Type.Null(),
      ],
      { description: 'Days a code it issues can be used, 1 to 3,650; null or left out: forever' },
    ),
  ),
  enabled: Type.Optional(Type.Boolean({ description: 'Listed and purchasable (default true)' })),
};
const nulls = (names: string[]) => Object.fromEntries(names.map((name) => [name, Type.Optional(Type.Null())]));

const FixedProductInput = Type.Object(
  {
    exchange_type: Type.Literal('fixed'),
    points_price: points('The price in points'),
    ...nulls([
      'variable_points_step',
      'variable_points_step_reward_value',
      'variable_points_min',
      'variable_points_max',
    ]),
    ...common,
  },
  { additionalProperties: false },
);

const VariableProductInput = Type.Object(
  {
    exchange_type: Type.Literal('variable'),
    points_price: Type.Optional(Type.Null()),
    variable_points_step: points('Points per step'),
    variable_points_step_reward_value: points('Reward value per step (such as 1 for $1 off per step)'),
    variable_points_min: points('Fewest points to spend: a multiple of the step'),
    variable_points_max: points('Most points to spend: a multiple of the step, at least the minimum'),
    ...common,
  },
  { additionalProperties: false },
);

/**
 * One product of `loyalty points-products create`: the API's fields without ids (and without
 * `exchange_description`, which is made from them), `reward` without ids, optional `enabled`.
 * The branch is chosen by `exchange_type`, so only its failures are reported.
 */
export const PointsProductInput = byConstant<Static<typeof FixedProductInput> | Static<typeof VariableProductInput>>(
  'exchange_type',
  [FixedProductInput, VariableProductInput],
);
export type PointsProductInput = Static<typeof PointsProductInput>;
export const PointsProductInputList = Type.Array(PointsProductInput, { maxItems: 1000 });

/** The body of a purchase: who buys, and for a variable product how many points to spend. */
export const PurchaseBody = Type.Object(
  {
    customer_id: Id('The customer who buys; a member of the account'),
    points_to_spend: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_POINTS_PER_CREDIT,
        description:
          'Variable products only (required there): a multiple of `variable_points_step` from ' +
          '`variable_points_min` to `variable_points_max`. Leave it out for a fixed product.',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ customer_id: 7 }, { customer_id: 7, points_to_spend: 500 }] },
);
export type PurchaseBody = Static<typeof PurchaseBody>;

/** A purchase of a points product (the reference's PointsPurchase). */
export const PointsPurchase = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the purchase' }),
    customer_id: Type.Integer({ description: 'The customer who bought' }),
    points_product_id: Type.Integer({ description: 'The product bought' }),
    points_spent: Type.Integer({ minimum: 0, description: 'Points spent' }),
    reward_fulfillment: RewardFulfillment,
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  {
    $id: 'PointsPurchase',
    description: "A customer's purchase of a points product, with the reward it issued",
  },
);
export type PointsPurchase = Static<typeof PointsPurchase>;

export const PointsPurchaseResponse = Type.Object({ points_purchase: PointsPurchase });
