import { type Static, Type } from 'typebox';
import { byConstant, StringEnum } from '../common-schemas.js';
import { PageMetadata, pageParams } from '../pagination/schemas.js';

/** The largest value of a PostgreSQL `integer` column: bigger counts would fail to insert. */
const MAX_INT4 = 2_147_483_647;

/** The most points one credit (one rule, one activity) or one points transaction may move. */
export const MAX_POINTS_PER_CREDIT = 1_000_000_000;

/**
 * The parts of a rule, with the input bounds (`bounded`, for the CLI input) or as bare shapes
 * (for the response). Fastify's serializer picks a union branch by validating the value against
 * it, so a bound in a response branch would turn one odd stored value into a 500 for the whole
 * list; the response schema only needs the shapes and the `type` constants.
 */
function parts(bounded: boolean) {
  const positive = (description: string) =>
    Type.Number(bounded ? { exclusiveMinimum: 0, description } : { description });
  const count = (description: string) =>
    Type.Integer(bounded ? { minimum: 1, maximum: MAX_INT4, description } : { description });
  // http(s) only: `javascript:` or `data:` URLs would be clickable in a storefront widget.
  const url = (description: string) =>
    Type.String(bounded ? { format: 'uri', pattern: '^https?://', maxLength: 2048, description } : { description });
  const closed = { additionalProperties: false };
  return {
    url,
    VariableRewardValue: Type.Object(
      {
        type: Type.Literal('variable'),
        variable: Type.Object(
          {
            value: positive('Reward earned per `per_amount` (5 points per $1: 5)'),
            per_amount: positive('Amount of the action that earns `value` (5 points per $1: 1)'),
          },
          closed,
        ),
      },
      closed,
    ),
    FixedRewardValue: Type.Object(
      {
        type: Type.Literal('fixed'),
        fixed: Type.Object(
          {
            value: Type.Number(
              bounded
                ? {
                    exclusiveMinimum: 0,
                    maximum: MAX_POINTS_PER_CREDIT,
                    description: 'Points earned each time (a fraction is dropped: 2.5 earns 2)',
                  }
                : { description: 'Points earned each time' },
            ),
          },
          closed,
        ),
      },
      closed,
    ),
    RollingEarningLimit: Type.Object(
      {
        max: count('Most earnings within the rolling window'),
        type: Type.Literal('rolling'),
        rolling: Type.Object(
          {
            unit: StringEnum(['day', 'week', 'month', 'year'], 'Unit of the rolling window'),
            unit_count: count('Length of the window, in units'),
          },
          closed,
        ),
      },
      closed,
    ),
    LifetimeEarningLimit: Type.Object(
      { max: count('Most earnings per customer, ever'), type: Type.Literal('lifetime') },
      closed,
    ),
    ActionText: Type.Union([Type.String(bounded ? { minLength: 1, maxLength: 255 } : {}), Type.Null()], {
      description: 'Label of the call to action; null: no clickable element',
    }),
    ActionUrl: Type.Union([url('Destination of the call to action'), Type.Null()], {
      description: 'Destination of the call to action; null: no clickable element',
    }),
  };
}

const input = parts(true);
const output = parts(false);

const Reward = Type.Object(
  { type: Type.Literal('points', { description: 'Kind of reward issued' }) },
  { additionalProperties: false },
);

const VipTierIds = Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), {
  maxItems: 100,
  uniqueItems: true,
  description: 'VIP tiers the rule is restricted to; `[]` means every tier',
});

const Name = Type.String({ minLength: 1, maxLength: 255, description: 'Name of the rule' });

/**
 * An earning rule as the API returns it. The unions are discriminated by `type` constants, so
 * Fastify's serializer picks the right branch and emits only that branch's keys
 * (`reward_value` never carries both `variable` and `fixed`). Bounds live on the input schema.
 */
export const EarningRule = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the rule' }),
    name: Type.String({ description: 'Name of the rule' }),
    image_url: output.url('Image of the rule'),
    action_text: output.ActionText,
    action_url: output.ActionUrl,
    restricted_to_vip_tier_ids: Type.Array(Type.Integer(), {
      description: 'VIP tiers the rule is restricted to; `[]` means every tier',
    }),
    reward: Reward,
    // The `$id`s name the branches in the OpenAPI document (this schema serves responses only).
    reward_value: Type.Union(
      [
        {
          ...output.VariableRewardValue,
          $id: 'VariableRewardValue',
          description: 'Points in proportion to the amount of the activity',
        },
        { ...output.FixedRewardValue, $id: 'FixedRewardValue', description: 'The same points for every activity' },
      ],
      { description: 'Value of the reward: `type` and the object of that type only' },
    ),
    earning_limit: Type.Union(
      [
        {
          ...output.RollingEarningLimit,
          $id: 'RollingEarningLimit',
          description: 'At most `max` earnings in every window of `unit_count` units',
        },
        {
          ...output.LifetimeEarningLimit,
          $id: 'LifetimeEarningLimit',
          description: 'At most `max` earnings per customer, ever',
        },
        Type.Null(),
      ],
      { description: 'Limit on earning; null: no limit' },
    ),
  },
  {
    $id: 'EarningRule',
    description: 'How customers earn points: what they do, what it gives, and how often',
    examples: [
      {
        id: 3,
        name: 'Place an order',
        image_url: 'https://cdn.example.com/earning/order.svg',
        action_text: 'Shop now',
        action_url: 'https://shop.example.com/',
        restricted_to_vip_tier_ids: [],
        reward: { type: 'points' },
        reward_value: { type: 'variable', variable: { value: 5, per_amount: 1 } },
        earning_limit: { max: 3, type: 'rolling', rolling: { unit: 'month', unit_count: 1 } },
      },
    ],
  },
);
export type EarningRule = Static<typeof EarningRule>;
export type RewardValue = EarningRule['reward_value'];
export type EarningLimit = EarningRule['earning_limit'];

/**
 * A rule as the administration CLI shows it: the API fields, whether it is listed, and the token
 * of the activity type it is bound to (not part of GET /v1/earning_rules, whose shape the spec fixes).
 */
export type StoredEarningRule = EarningRule & { enabled: boolean; activity_token: string | null };

export const EarningRulesPage = Type.Object(
  { earning_rules: Type.Array(EarningRule), metadata: PageMetadata },
  {
    $id: 'EarningRulesPage',
    description: 'A page of enabled earning rules, id descending',
    examples: [
      {
        earning_rules: [
          {
            id: 3,
            name: 'Place an order',
            image_url: 'https://cdn.example.com/earning/order.svg',
            action_text: null,
            action_url: null,
            restricted_to_vip_tier_ids: [],
            reward: { type: 'points' },
            reward_value: { type: 'fixed', fixed: { value: 100 } },
            earning_limit: null,
          },
        ],
        metadata: { next_cursor: 'eyJpZCI6M30.c2lnbmF0dXJl', previous_cursor: '' },
      },
    ],
  },
);
export type EarningRulesPage = Static<typeof EarningRulesPage>;

export const EarningRulesQuery = Type.Object(pageParams('rules'));
export type EarningRulesQuery = Static<typeof EarningRulesQuery>;

/**
 * One rule of `loyalty earning-rules create`: the API fields without `id`, plus `enabled`.
 * `action_text`, `action_url` default to null, `restricted_to_vip_tier_ids` to `[]`,
 * `earning_limit` to null (no limit) and `enabled` to true.
 */
export const EarningRuleInput = Type.Object(
  {
    name: Name,
    image_url: input.url('Image of the rule'),
    action_text: Type.Optional(input.ActionText),
    action_url: Type.Optional(input.ActionUrl),
    restricted_to_vip_tier_ids: Type.Optional(VipTierIds),
    reward: Reward,
    reward_value: byConstant<RewardValue>('type', [input.VariableRewardValue, input.FixedRewardValue]),
    earning_limit: Type.Optional(
      byConstant<EarningLimit>('type', [input.RollingEarningLimit, input.LifetimeEarningLimit], { nullable: true }),
    ),
    enabled: Type.Optional(Type.Boolean({ description: 'Listed by GET /v1/earning_rules (default true)' })),
    activity_token: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()], {
        description:
          'The token of the account activity type whose activities the rule evaluates; null or absent: the ' +
          'rule is shown but never credits anything',
      }),
    ),
  },
  { additionalProperties: false },
);
export type EarningRuleInput = Static<typeof EarningRuleInput>;

export const EarningRuleInputList = Type.Array(EarningRuleInput);
