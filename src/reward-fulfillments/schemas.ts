import { type Static, Type } from 'typebox';
import { Id, StringEnum } from '../common-schemas.js';
import { PageMetadata, pageParams, UpdatedAtMin } from '../pagination/schemas.js';

export const FulfillmentStatus = StringEnum(
  ['pending', 'issued', 'cancelled', 'failed'],
  'Whether the reward is available to the customer',
);
export const UsageStatus = StringEnum(
  ['used', 'unused', 'expired', 'untracked'],
  'Whether the customer has used the reward; `expired`: unused, past its `expires_at`',
);

/** A fulfillment as the API shows it: the schema's example, and the events' (src/events/schemas.ts). */
export const REWARD_FULFILLMENT_EXAMPLE = {
  id: 9,
  name: '$5 off coupon',
  code: 'K7MP2XQ9RT4WBN3H',
  customer_id: 7,
  fulfillment_status: 'issued',
  image_url: 'https://cdn.example.com/rewards/5-off.png',
  action_text: null,
  action_url: null,
  usage_instructions: null,
  terms_and_conditions: null,
  expires_at: null,
  usage_status: 'unused',
  used_at: null,
  created_at: '2026-01-06T09:15:00.000Z',
  updated_at: '2026-01-06T09:15:00.000Z',
};

/** A reward issued to a customer, with its code (the reference's RewardFulfillment). */
export const RewardFulfillment = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the reward fulfillment' }),
    name: Type.String({ description: 'Name of the reward issued' }),
    code: Type.String({
      description:
        'The code the customer applies (16 characters of A–Z and 2–9 without I and O), unique in the account',
    }),
    customer_id: Type.Integer({ description: 'The customer it was issued to' }),
    fulfillment_status: FulfillmentStatus,
    image_url: Type.String({ description: 'Image of the reward; "" when it has none' }),
    action_text: Type.Union([Type.String(), Type.Null()], { description: 'Call to action; null' }),
    action_url: Type.Union([Type.String(), Type.Null()], { description: 'Where to use it; null' }),
    usage_instructions: Type.Union([Type.String(), Type.Null()], { description: 'How to use it; null' }),
    terms_and_conditions: Type.Union([Type.String(), Type.Null()], { description: 'Its restrictions; null' }),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description:
        "When the code stops being usable (its product's `expires_after_days` after it was issued); null: never",
    }),
    usage_status: UsageStatus,
    used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When it was used; null while it was not',
    }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  {
    $id: 'RewardFulfillment',
    description: 'A reward issued to a customer (by a points purchase), with the code they apply',
    examples: [REWARD_FULFILLMENT_EXAMPLE],
  },
);
export type RewardFulfillment = Static<typeof RewardFulfillment>;

export const RewardFulfillmentsPage = Type.Object(
  { reward_fulfillments: Type.Array(RewardFulfillment), metadata: PageMetadata },
  { description: 'A page of reward fulfillments, id descending' },
);
export type RewardFulfillmentsPage = Static<typeof RewardFulfillmentsPage>;

export const RewardFulfillmentResponse = Type.Object({ reward_fulfillment: RewardFulfillment });
export type RewardFulfillmentResponse = Static<typeof RewardFulfillmentResponse>;

export const RewardFulfillmentParams = Type.Object({ id: Id('Identifier of the reward fulfillment') });

export const UseBody = Type.Object(
  {
    used_at: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'When it was used (ISO 8601), not in the future nor before it was issued; now when left out',
      }),
    ),
  },
  { additionalProperties: false },
);
export type UseBody = Static<typeof UseBody>;

export const RewardFulfillmentsQuery = Type.Object({
  ...pageParams('reward fulfillments'),
  code: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'Only the fulfillment with this code: exact, but case, spaces and dashes do not matter',
    }),
  ),
  customer_id: Type.Optional(Id('Only the fulfillments of this customer')),
  fulfillment_status: Type.Optional(FulfillmentStatus),
  usage_status: Type.Optional(UsageStatus),
  updated_at_min: UpdatedAtMin('reward fulfillments'),
});
export type RewardFulfillmentsQuery = Static<typeof RewardFulfillmentsQuery>;
