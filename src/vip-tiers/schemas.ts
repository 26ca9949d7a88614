import { type Static, Type } from 'typebox';
import { HttpUrl, Text } from '../common-schemas.js';
import { Reward } from '../points-products/schemas.js';

/** The most points a milestone may ask for (points earned are kept below 2^53). */
export const MAX_MILESTONE = 1_000_000_000_000_000;

const Perk = Type.Object(
  { name: Type.String({ description: 'A benefit of the tier' }) },
  { additionalProperties: false },
);

/** A VIP tier as the API returns it (the reference's VipTier). */
export const VipTier = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the tier' }),
    name: Type.String({ description: 'Display name of the tier' }),
    image_url: Type.String({ description: 'Image of the tier; "" when it has none' }),
    milestone: Type.Integer({ description: 'Points earned (all time) from which a customer is in the tier' }),
    perks: Type.Array(Perk, { description: 'Ongoing benefits of the tier' }),
    entry_rewards: Type.Array(Reward, {
      maxItems: 0,
      description: 'Rewards issued on entering the tier: always empty (not supported yet)',
    }),
  },
  {
    $id: 'VipTier',
    description: 'A tier of the all-time VIP program, reached by points earned',
    examples: [
      {
        id: 2,
        name: 'Gold',
        image_url: 'https://cdn.example.com/tiers/gold.svg',
        milestone: 500,
        perks: [{ name: 'Free shipping' }],
        entry_rewards: [],
      },
    ],
  },
);
export type VipTier = Static<typeof VipTier>;

export const VipTiersResponse = Type.Object(
  { vip_tiers: Type.Array(VipTier) },
  { description: "The account's VIP tiers, ascending milestone" },
);

export const VipTiersQuery = Type.Object({
  include: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'Accepted for compatibility; perks and entry_rewards are always included',
    }),
  ),
});

/** What `loyalty vip-tiers create` accepts (and `update`, every field optional). */
export const VipTierInput = Type.Object(
  {
    name: Text('Display name of the tier'),
    milestone: Type.Integer({
      minimum: 0,
      maximum: MAX_MILESTONE,
      description: 'Points earned (all time) from which a customer is in the tier; one tier per milestone',
    }),
    image_url: Type.Optional(Type.Union([HttpUrl('Image of the tier'), Type.Literal('')])),
    perks: Type.Optional(
      Type.Array(Type.Object({ name: Text('A benefit of the tier') }, { additionalProperties: false }), {
        maxItems: 50,
      }),
    ),
  },
  { additionalProperties: false },
);
export type VipTierInput = Static<typeof VipTierInput>;

/** What `loyalty vip-tiers update` accepts: the fields to change. */
export const VipTierPatch = Type.Partial(VipTierInput, { additionalProperties: false });
export type VipTierPatch = Static<typeof VipTierPatch>;

/** A tier as a change names it: enough to show it, even after the tier was deleted. */
export const VipTierSummary = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the tier' }),
    name: Type.String({ description: 'Display name of the tier' }),
    image_url: Type.String({ description: 'Image of the tier; "" when it has none' }),
  },
  { description: 'A VIP tier, as it was at the change' },
);
export type VipTierSummary = Static<typeof VipTierSummary>;

/** A customer's move between tiers (the reference's VipTierChange, with `customer_id`). */
export const VipTierChange = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the VIP tier change' }),
    customer_id: Type.Integer({ description: 'The customer who moved' }),
    previous_vip_tier: Type.Union([VipTierSummary, Type.Null()], {
      description: 'The tier the customer was in before the change; null: none',
    }),
    current_vip_tier: Type.Union([VipTierSummary, Type.Null()], {
      description: 'The tier the customer is in after the change; null: none',
    }),
    description: Type.String({ description: 'The change in words ("Achieved Gold", "Left Gold")' }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time', description: 'Equal to created_at: changes never change' }),
  },
  {
    $id: 'VipTierChange',
    description: "A customer's move from one VIP tier to another, for any reason (points earned, a tier changed)",
    examples: [
      {
        id: 14,
        customer_id: 7,
        previous_vip_tier: { id: 1, name: 'Silver', image_url: '' },
        current_vip_tier: { id: 2, name: 'Gold', image_url: 'https://cdn.example.com/tiers/gold.svg' },
        description: 'Achieved Gold',
        created_at: '2026-01-05T16:30:00.000Z',
        updated_at: '2026-01-05T16:30:00.000Z',
      },
    ],
  },
);
export type VipTierChange = Static<typeof VipTierChange>;
