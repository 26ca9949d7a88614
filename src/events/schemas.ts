import { type Static, type TSchema, Type } from 'typebox';
import { Activity } from '../activities/schemas.js';
import { StringEnum } from '../common-schemas.js';
import { Customer } from '../customers/schemas.js';
import { PageMetadata, pageParams } from '../pagination/schemas.js';
import { PointsPurchase } from '../points-products/schemas.js';
import { PointsTransaction } from '../points-transactions/schemas.js';
import { Referral } from '../referrals/schemas.js';
import { REWARD_FULFILLMENT_EXAMPLE, RewardFulfillment } from '../reward-fulfillments/schemas.js';
import { VipTierChange } from '../vip-tiers/schemas.js';
import { EVENT_TYPE_NAMES, EVENT_TYPES, type EventType } from './catalog.js';

/** An event id: `evt_` and random base62 (at least 20 characters; 24 are made). */
export const EVENT_ID_PATTERN = '^evt_[0-9A-Za-z]{20,100}$';

const EventId = Type.String({
  pattern: EVENT_ID_PATTERN,
  description: 'Identifier of the event: `evt_` and random base62',
});

/**
 * Each event type's `data`: the resource under its usual key, as the API showed it at the change
 * (../shared/events-contract.md). The OpenAPI document's `webhooks` section is built from these.
 */
export const EVENT_DATA = {
  'customer.created': Type.Object({ customer: Customer }),
  'customer.updated': Type.Object({ customer: Customer }),
  'customer.points_expiring': Type.Object({ customer: Customer }),
  'activity.created': Type.Object({ activity: Activity }),
  'points_transaction.created': Type.Object({
    points_transaction: PointsTransaction,
    // The customer after the transaction: their new balance and tier.
    customer: Customer,
  }),
  'customer.vip_tier_changed': Type.Object({ vip_tier_change: VipTierChange }),
  'points_purchase.created': Type.Object({ points_purchase: PointsPurchase }),
  'reward_fulfillment.created': Type.Object({ reward_fulfillment: RewardFulfillment }),
  'reward_fulfillment.updated': Type.Object({ reward_fulfillment: RewardFulfillment }),
  'referral.created': Type.Object({ referral: Referral }),
  'referral.completed': Type.Object({ referral: Referral }),
  ping: Type.Object({}, { additionalProperties: false, description: 'Nothing: a test event' }),
} as const satisfies Record<EventType, TSchema>;

const envelope = {
  id: EventId,
  account_id: Type.Integer({ description: 'The account it happened in' }),
  created_at: Type.String({ format: 'date-time', description: 'When the change was made' }),
};

/** An event of the feed, of any type: `data` is the resource of its type (see `webhooks`). */
export const Event = Type.Object(
  {
    id: envelope.id,
    type: StringEnum(EVENT_TYPE_NAMES, 'What happened: one of the catalog (the `webhooks` section)'),
    account_id: envelope.account_id,
    created_at: envelope.created_at,
    data: Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      additionalProperties: true,
      description:
        "The resource under its usual key, as the API showed it at the change; the type's schema is under `webhooks`",
    }),
  },
  {
    $id: 'Event',
    description: 'Something that happened in the program, as the feed shows it and a webhook sends it',
    examples: [
      {
        id: 'evt_3Xk9fQ2mZp8LwR4tYv6BnQ1a',
        type: 'reward_fulfillment.created',
        account_id: 1,
        created_at: '2026-01-06T09:15:00.000Z',
        data: {
          reward_fulfillment: REWARD_FULFILLMENT_EXAMPLE,
        },
      },
    ],
  },
);
export type Event = Static<typeof Event>;

/** The envelope of one type, as a webhook of that type sends it: `type` fixed, `data` that type's. */
export function eventOf(type: EventType): TSchema {
  return Type.Object(
    {
      id: envelope.id,
      type: Type.Literal(type),
      account_id: envelope.account_id,
      created_at: envelope.created_at,
      data: EVENT_DATA[type],
    },
    { description: `A \`${type}\` event: ${EVENT_TYPES[type].description}` },
  );
}

export const EventResponse = Type.Object({ event: Event });

export const EventsPage = Type.Object(
  { events: Type.Array(Event), metadata: PageMetadata },
  { description: 'A page of events, newest first' },
);
export type EventsPage = Static<typeof EventsPage>;

export const EventsQuery = Type.Object({
  ...pageParams('events'),
  type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1000,
      description: `Only events of this type, or of these types (comma-separated): ${EVENT_TYPE_NAMES.join(', ')}`,
    }),
  ),
  created_at_min: Type.Optional(
    Type.String({
      format: 'date-time',
      maxLength: 64,
      description:
        'Only events created at or after this time (ISO 8601 date-time with an offset, such as 2026-01-31T00:00:00Z)',
    }),
  ),
});
export type EventsQuery = Static<typeof EventsQuery>;

export const EventParams = Type.Object({ id: EventId });
