import type { ReferralSettings } from '../../src/referral-settings/schemas.js';

/** A complete referral program. */
export const referralSettingsFixture: ReferralSettings = {
  status: 'active',
  sender_reward: { name: '$5 off coupon', image: { url: 'https://cdn.example/sender.png', content_type: 'image/png' } },
  receiver_reward: { name: '10% off', image: { url: 'https://cdn.example/receiver.svg', content_type: null } },
};

/** The smallest valid earning rule: a fixed 10 points. */
export const earningRuleFixture = (name: string) => ({
  name,
  image_url: 'https://cdn.example.com/r.svg',
  reward: { type: 'points' },
  reward_value: { type: 'fixed', fixed: { value: 10 } },
  earning_limit: null,
});
