import { type Static, Type } from 'typebox';
import { StringEnum } from '../common-schemas.js';

export const Image = Type.Object(
  {
    url: Type.String({ format: 'uri', maxLength: 2048, description: 'URL of the image' }),
    content_type: Type.Union(
      [Type.String({ pattern: '^[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+$', maxLength: 255 }), Type.Null()],
      {
        description: 'MIME type of the image, for example image/png',
      },
    ),
  },
  { additionalProperties: false },
);

export const RewardSummary = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255, description: 'Name of the reward' }),
    image: Image,
  },
  { additionalProperties: false },
);

export const ReferralSettings = Type.Object(
  {
    status: StringEnum(['active', 'inactive'], 'Status of the referral program'),
    sender_reward: { ...RewardSummary, description: 'Reward for a customer who refers someone who joins' },
    receiver_reward: { ...RewardSummary, description: 'Reward for the referred individual who joins' },
  },
  { additionalProperties: false },
);
export type ReferralSettings = Static<typeof ReferralSettings>;

/**
 * The response, with the settings named `ReferralSettings` for the OpenAPI document. The `$id`
 * is on a copy: the CLI's validator compiles `ReferralSettings` itself, and one Ajv instance
 * refuses two schemas with the same id.
 */
export const ReferralSettingsResponse = Type.Object({
  referral_settings: {
    ...ReferralSettings,
    $id: 'ReferralSettings',
    description: 'The referral program of the account: its status and the rewards of both customers',
    examples: [
      {
        status: 'active',
        sender_reward: {
          name: '$5 off coupon',
          image: { url: 'https://cdn.example.com/rewards/5-off.png', content_type: 'image/png' },
        },
        receiver_reward: {
          name: '10% off your first order',
          image: { url: 'https://cdn.example.com/rewards/10-percent.png', content_type: null },
        },
      },
    ],
  },
});
export type ReferralSettingsResponse = Static<typeof ReferralSettingsResponse>;

/** Referral program fields beyond the spec's shape (docs/referrals.md), with their bounds. */
export const REFERRAL_PROGRAM_LIMITS = {
  rewardPoints: { min: 1, max: 1_000_000 },
  windowDays: { min: 1, max: 365, default: 30 },
  senderLimit: { min: 1, max: 10_000, default: 50 },
} as const;

export const REFERRAL_REWARD_FULFILLMENTS = ['code', 'points'] as const;

/** A reward as `referral-settings set` takes it: the spec's, and how it is given. */
const RewardInput = Type.Object(
  {
    name: RewardSummary.properties.name,
    image: Image,
    fulfillment: Type.Optional(
      StringEnum(
        REFERRAL_REWARD_FULFILLMENTS,
        'How the reward is given: a reward fulfillment with a code (the default), or points',
      ),
    ),
    points: Type.Optional(
      Type.Union(
        [
          Type.Integer({
            minimum: REFERRAL_PROGRAM_LIMITS.rewardPoints.min,
            maximum: REFERRAL_PROGRAM_LIMITS.rewardPoints.max,
          }),
          Type.Null(),
        ],
        { description: 'The points credited when `fulfillment` is `points`' },
      ),
    ),
  },
  { additionalProperties: false },
);

/**
 * What `loyalty referral-settings set` and the console take: the spec's settings, and what runs
 * the program (docs/referrals.md). `GET /v1/referral_settings` keeps the spec's shape.
 */
export const ReferralProgramInput = Type.Object(
  {
    status: ReferralSettings.properties.status,
    sender_reward: RewardInput,
    receiver_reward: RewardInput,
    qualifying_activity_token: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()], {
        description: 'The activity type whose activity completes a referral (an order)',
      }),
    ),
    minimum_amount: Type.Optional(
      Type.Union([Type.Number(), Type.String({ maxLength: 40 })], {
        description: 'The least properties.amount of a qualifying activity (a decimal, 0 or more)',
      }),
    ),
    window_days: Type.Optional(
      Type.Integer({
        minimum: REFERRAL_PROGRAM_LIMITS.windowDays.min,
        maximum: REFERRAL_PROGRAM_LIMITS.windowDays.max,
      }),
    ),
    landing_url: Type.Optional(
      Type.Union([Type.String({ format: 'uri', maxLength: 2048 }), Type.Null()], {
        description: "Where a referral URL sends the friend: the merchant's store, https://",
      }),
    ),
    sender_limit_per_30_days: Type.Optional(
      Type.Integer({
        minimum: REFERRAL_PROGRAM_LIMITS.senderLimit.min,
        maximum: REFERRAL_PROGRAM_LIMITS.senderLimit.max,
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReferralProgramInput = Static<typeof ReferralProgramInput>;

/** A reward of the running program: the spec's, and how it is given. */
export interface ProgramReward {
  name: string;
  image: { url: string; content_type: string | null };
  fulfillment: (typeof REFERRAL_REWARD_FULFILLMENTS)[number];
  points: number | null;
}

/** The account's referral program as it runs: every field, defaults filled in. */
export interface ReferralProgram {
  status: 'active' | 'inactive';
  sender_reward: ProgramReward;
  receiver_reward: ProgramReward;
  qualifying_activity_token: string | null;
  /** A decimal numeral (`25.5`). */
  minimum_amount: string;
  window_days: number;
  landing_url: string | null;
  sender_limit_per_30_days: number;
}

/** The names of the program's fields beyond the spec's (at the top level and in each reward). */
export const PROGRAM_FIELDS = [
  'qualifying_activity_token',
  'minimum_amount',
  'window_days',
  'landing_url',
  'sender_limit_per_30_days',
] as const;
export const PROGRAM_REWARD_FIELDS = ['fulfillment', 'points'] as const;
