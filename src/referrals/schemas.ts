import { type Static, type TSchema, Type } from 'typebox';
import { Id, NO_NUL, NullableInteger, StringEnum, Timestamp } from '../common-schemas.js';
import { CustomerStateSchema, EmailAddress } from '../customers/schemas.js';
import { PageMetadata, pageParams, UpdatedAtMin } from '../pagination/schemas.js';
import { RewardFulfillment } from '../reward-fulfillments/schemas.js';
import { REFERRAL_CODE_PATTERN } from './code.js';

export const REFERRAL_STATUSES = ['pending', 'completed', 'expired'] as const;
export type ReferralStatus = (typeof REFERRAL_STATUSES)[number];

/** Why `422 referral_not_allowed` refused a referral (`details[0].reason`). */
export const REFUSAL_REASONS = ['self_referral', 'existing_customer', 'already_referred', 'sender_limit'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

const NameInput = (description: string) =>
  Type.Optional(Type.Union([Type.String({ maxLength: 255, pattern: NO_NUL }), Type.Null()], { description }));

/** The body of `POST /v1/referrals`. */
export const ReferralInput = Type.Object(
  {
    referral_code: Type.Optional(
      Type.String({
        pattern: REFERRAL_CODE_PATTERN,
        description: "The sender's referral code (from their referral URL); send this or sender_customer_id",
      }),
    ),
    sender_customer_id: Type.Optional(Id('The customer who refers; send this or referral_code')),
    receiver_customer_email: { ...EmailAddress, description: 'The email of the friend who is referred' },
    receiver_first_name: NameInput("The friend's given name, for their customer when it is made"),
    receiver_last_name: NameInput("The friend's family name, for their customer when it is made"),
  },
  { additionalProperties: false },
);
export type ReferralInput = Static<typeof ReferralInput>;

export const CreateReferralBody = Type.Object({ referral: ReferralInput }, { additionalProperties: false });
export type CreateReferralBody = Static<typeof CreateReferralBody>;

/** A customer inside a referral, as the reference's Referral nests them. */
export const ReferralCustomer = Type.Object(
  {
    id: Type.Integer(),
    first_name: Type.Union([Type.String(), Type.Null()]),
    last_name: Type.Union([Type.String(), Type.Null()]),
    email: Type.String(),
    state: CustomerStateSchema,
    date_of_birth: Type.Union([Type.String({ format: 'date' }), Type.Null()]),
    points_balance: Type.Integer(),
    referral_url: Type.Union([Type.String(), Type.Null()]),
    vip_tier_id: Type.Union([Type.Integer(), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { description: 'A customer of the referral' },
);
export type ReferralCustomer = Static<typeof ReferralCustomer>;

/**
 * A fulfillment or null. The receiver's holds the RewardFulfillment schema; the sender's refers to
 * it by its `$id` (one schema may hold an `$id` only once: Fastify's serializer refuses two).
 */
const NullableFulfillment = <S extends TSchema = typeof RewardFulfillment>(
  description: string,
  schema: S = RewardFulfillment as unknown as S,
) => Type.Union([schema, Type.Null()], { description });

/** A referral as the API shows it: the reference's Referral, with its status and dates. */
export const Referral = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the referral' }),
    status: StringEnum(
      REFERRAL_STATUSES,
      'pending until the friend completes a qualifying order; expired when the window passed first',
    ),
    referral_code: Type.Union([Type.String(), Type.Null()], {
      description: "The sender's code the referral was made with; null when made naming the sender by id",
    }),
    receiver_customer: Type.Union([ReferralCustomer, Type.Null()], { description: 'The friend who was referred' }),
    receiver_customer_email: Type.String({ description: 'The email of the friend who was referred' }),
    receiver_reward_fulfillment: NullableFulfillment(
      "The friend's reward; null when it was points (see receiver_points_transaction_id)",
    ),
    receiver_points_transaction_id: NullableInteger(
      "The points transaction of the friend's reward, when it was points",
    ),
    sender_customer: { ...ReferralCustomer, description: 'The customer whose referral code was used' },
    sender_reward_fulfillment: NullableFulfillment(
      "The sender's reward, once the referral completed; null before, and when it was points",
      Type.Unsafe<RewardFulfillment>({ $ref: 'RewardFulfillment' }),
    ),
    sender_points_transaction_id: NullableInteger("The points transaction of the sender's reward, when it was points"),
    expires_at: Timestamp('The end of the window in which the referral can complete'),
    completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the friend completed a qualifying order; null until then',
    }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Referral', description: 'A friend referred by a customer, and the rewards of both' },
);
export type Referral = Static<typeof Referral>;

export const ReferralResponse = Type.Object({ referral: Referral });

export const ReferralsPage = Type.Object(
  { referrals: Type.Array(Referral), metadata: PageMetadata },
  { description: 'A page of referrals, id descending' },
);
export type ReferralsPage = Static<typeof ReferralsPage>;

export const ReferralsQuery = Type.Object({
  ...pageParams('referrals'),
  sender_customer_id: Type.Optional(Id('Only the referrals of this sender')),
  receiver_customer_email: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 254,
      description: "Only the referral of this friend's email (matched case-insensitively, surrounding spaces trimmed)",
    }),
  ),
  status: Type.Optional(StringEnum(REFERRAL_STATUSES, 'Only the referrals with this status')),
  updated_at_min: UpdatedAtMin('referrals'),
});
export type ReferralsQuery = Static<typeof ReferralsQuery>;

export const ReferralParams = Type.Object({ id: Id('Identifier of the referral') });

/** Any text: what is not a referral code answers the route's 404 page, as an unknown code does. */
export const ReferralCodeParams = Type.Object({ code: Type.String() });
