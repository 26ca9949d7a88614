import type { ReferralSettings } from '../../src/referral-settings/schemas.js';

/** A complete referral program. */
export const referralSettingsFixture: ReferralSettings = {
  status: 'active',
  sender_reward: { name: '$5 off coupon', image: { url: 'https://cdn.example/sender.png', content_type: 'image/png' } },
  receiver_reward: { name: '10% off', image: { url: 'https://cdn.example/receiver.svg', content_type: null } },
};
