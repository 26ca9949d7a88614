import { type Static, Type } from 'typebox';
import { Id, NO_NUL } from '../common-schemas.js';
import { EmailAddress } from '../customers/schemas.js';
import { POINTS_TRANSACTION_EXAMPLE, PointsTransaction } from '../points-transactions/schemas.js';
import { Properties } from '../properties.js';

/** How far in the future `created_on_origin_at` may lie: clocks differ a little, not more. */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

export const ActivityInput = Type.Object(
  {
    token: Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: NO_NUL,
      description: 'The token of one of the account activity types (`activity_…`)',
    }),
    customer_id: Type.Optional(Id('The customer who did it; exactly one of customer_id and customer_email')),
    customer_email: Type.Optional({
      ...EmailAddress,
      description:
        'The email of the customer who did it (matched as create_or_update matches); a new email makes a new ' +
        'member customer. Exactly one of customer_id and customer_email.',
    }),
    distinct_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: NO_NUL,
        description:
          'Its identifier in the external system (an order number). A second activity with the same token and ' +
          'distinct_id answers 200 with the first one and credits nothing.',
      }),
    ),
    properties: Type.Optional(
      Properties(
        'Free-form properties, at most 16 KiB as compact JSON and 5 levels deep. `amount` (a JSON number or a ' +
          'decimal string, 0 or more, at most 4 decimal places, at most 10,000,000,000) is what variable earning ' +
          'rules multiply; it is required when one is bound to the token.',
      ),
    ),
    created_on_origin_at: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description:
          'When the customer did it (ISO 8601 with an offset), at most 5 minutes in the future; default: when it ' +
          'was received. Rolling earning limits count by this time.',
      }),
    ),
  },
  {
    additionalProperties: false,
    // Who did it, as the reference says it: exactly one of the two (both, or neither, is refused).
    // The branches name their field (with an empty schema: the checks are the property's above) so
    // that a generated client types the body as one form or the other. They say nothing of other
    // fields (the object above closes them): an explicit `additionalProperties: true` made a
    // generated client accept any key, so a typo like `distinctid` compiled.
    oneOf: [
      { title: 'With customer_id', type: 'object', required: ['customer_id'], properties: { customer_id: {} } },
      {
        title: 'With customer_email',
        type: 'object',
        required: ['customer_email'],
        properties: { customer_email: {} },
      },
    ],
  },
);
export type ActivityInput = Static<typeof ActivityInput>;

export const ACTIVITY_EXAMPLE = {
  activity: {
    token: 'activity_3Xk9fQ2mZp8LwR4tYv6B',
    customer_email: 'jane@example.com',
    distinct_id: 'order-1001',
    properties: { amount: '25.50' },
  },
};

export const CreateActivityBody = Type.Object(
  { activity: ActivityInput },
  { additionalProperties: false, examples: [ACTIVITY_EXAMPLE] },
);
export type CreateActivityBody = Static<typeof CreateActivityBody>;

/** An activity as the API returns it: the reference's Activity, and what it credited. */
export const Activity = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the activity' }),
    customer_id: Type.Integer({ description: 'The customer who did it' }),
    token: Type.String({ description: 'The token of its activity type' }),
    distinct_id: Type.Union([Type.String(), Type.Null()], { description: 'Its identifier in the external system' }),
    properties: Properties('The properties it was sent with'),
    created_on_origin_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the customer did it, as sent; null when not sent',
    }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
    points_transactions: Type.Array(PointsTransaction, {
      description: 'The points it credited, one transaction per earning rule that gave points; possibly none',
    }),
  },
  {
    $id: 'Activity',
    description: 'Something a customer did, and the points it credited',
    examples: [
      {
        id: 31,
        customer_id: 7,
        token: 'activity_3Xk9fQ2mZp8LwR4tYv6B',
        distinct_id: 'order-1001',
        properties: { amount: '25.50' },
        created_on_origin_at: null,
        created_at: '2026-01-05T16:30:00.000Z',
        updated_at: '2026-01-05T16:30:00.000Z',
        points_transactions: [POINTS_TRANSACTION_EXAMPLE],
      },
    ],
  },
);
export type Activity = Static<typeof Activity>;

export const ActivityResponse = Type.Object({ activity: Activity });
