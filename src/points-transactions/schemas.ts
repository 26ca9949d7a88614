import { type Static, Type } from 'typebox';
import { Id, NO_NUL } from '../common-schemas.js';
import { MAX_POINTS_PER_CREDIT } from '../earning-rules/schemas.js';
import { PageMetadata, pageParams, UpdatedAtMin } from '../pagination/schemas.js';

export const DESCRIPTION_LENGTH = 255;
export const INTERNAL_NOTE_LENGTH = 1000;

/** A change to a customer's points balance (the reference's PointsTransaction). */
/** A credit as the API answers it: the PointsTransaction's example, and inside the Activity's. */
export const POINTS_TRANSACTION_EXAMPLE = {
  id: 12,
  customer_id: 7,
  points_change: 25,
  description: 'Place an order',
  internal_note: null,
  activity_id: 31,
  points_purchase_id: null,
  created_at: '2026-01-05T16:30:00.000Z',
  updated_at: '2026-01-05T16:30:00.000Z',
};

export const PointsTransaction = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the points transaction' }),
    customer_id: Type.Integer({ description: 'The customer whose balance it changed' }),
    points_change: Type.Integer({ description: 'Points added (positive) or removed (negative)' }),
    description: Type.String({ description: 'Why, in words the customer may see' }),
    internal_note: Type.Union([Type.String(), Type.Null()], { description: 'A note for the merchant only' }),
    activity_id: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The activity that credited it, or null (a manual change)',
    }),
    points_purchase_id: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'The points purchase it paid for (a debit) or gives back (the refund of a cancelled reward), or null',
    }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time', description: 'Equal to created_at: transactions never change' }),
  },
  {
    $id: 'PointsTransaction',
    description: "A change to a customer's points balance: the ledger never changes a transaction",
    examples: [POINTS_TRANSACTION_EXAMPLE],
  },
);
export type PointsTransaction = Static<typeof PointsTransaction>;

export const PointsTransactionInput = Type.Object(
  {
    customer_id: Id('The customer whose balance to change'),
    points_change: Type.Integer({
      minimum: -MAX_POINTS_PER_CREDIT,
      maximum: MAX_POINTS_PER_CREDIT,
      not: { const: 0 },
      description: 'Points to add (positive) or remove (negative): not 0, at most 1,000,000,000 either way',
    }),
    description: Type.Optional(
      Type.String({
        maxLength: DESCRIPTION_LENGTH,
        pattern: NO_NUL,
        description: 'Why, for the customer (default "")',
      }),
    ),
    internal_note: Type.Optional(
      Type.Union([Type.String({ maxLength: INTERNAL_NOTE_LENGTH, pattern: NO_NUL }), Type.Null()], {
        description: 'A note for the merchant only',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PointsTransactionInput = Static<typeof PointsTransactionInput>;

export const PointsTransactionExample = {
  points_transaction: {
    customer_id: 7,
    points_change: -100,
    description: 'Points correction',
    internal_note: 'Order #6834',
  },
};

export const CreatePointsTransactionBody = Type.Object(
  { points_transaction: PointsTransactionInput },
  { additionalProperties: false, examples: [PointsTransactionExample] },
);
export type CreatePointsTransactionBody = Static<typeof CreatePointsTransactionBody>;

export const PointsTransactionResponse = Type.Object({ points_transaction: PointsTransaction });

export const PointsTransactionsPage = Type.Object(
  { points_transactions: Type.Array(PointsTransaction), metadata: PageMetadata },
  { description: 'A page of points transactions, id descending' },
);
export type PointsTransactionsPage = Static<typeof PointsTransactionsPage>;

export const PointsTransactionsQuery = Type.Object({
  ...pageParams('points transactions'),
  customer_id: Type.Optional(Id('Only the transactions of this customer')),
  updated_at_min: UpdatedAtMin('points transactions'),
});
export type PointsTransactionsQuery = Static<typeof PointsTransactionsQuery>;

export const PointsTransactionParams = Type.Object({ id: Id('Identifier of the points transaction') });

/** The `Idempotency-Key` request header of the engine contract. */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x20-\\x7E]+$',
      description:
        '1 to 255 printable ASCII characters. Within 24 hours the same key with the same body replays the first ' +
        'answer and writes nothing; with another body it is `409 idempotency_key_reused`.',
    }),
  ),
});
