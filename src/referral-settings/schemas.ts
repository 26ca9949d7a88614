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
