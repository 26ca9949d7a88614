import { type Static, Type } from 'typebox';
import { Text } from '../common-schemas.js';

const PointsLabel = Type.Object(
  {
    one: Text('The singular unit for a point (1 Coin)', 64),
    other: Text('The unit for zero or many points (0 Coins, 5 Coins)', 64),
  },
  { additionalProperties: false, description: "The branding of the account's points currency" },
);

/** Days of inactivity after which a balance expires: from 30 days to 5 years. */
export const MIN_INACTIVITY_DAYS = 30;
export const MAX_INACTIVITY_DAYS = 1825;

const PointsExpiry = Type.Union(
  [
    Type.Object(
      {
        inactivity_days: Type.Integer({
          minimum: MIN_INACTIVITY_DAYS,
          maximum: MAX_INACTIVITY_DAYS,
          description: `Days without a points transaction or activity of theirs after which a member's whole balance expires (${MIN_INACTIVITY_DAYS} to ${MAX_INACTIVITY_DAYS})`,
        }),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: 'When balances expire; null: never (the default)' },
);

/** The account's points currency: what a point is called, in the singular and otherwise; and when balances expire. */
export const PointsSettings = Type.Object(
  { points_label: PointsLabel, points_expiry: PointsExpiry },
  {
    $id: 'PointsSettings',
    description: 'What the account calls its points, and when balances expire',
    additionalProperties: false,
    examples: [{ points_label: { one: 'Coin', other: 'Coins' }, points_expiry: { inactivity_days: 365 } }],
  },
);
export type PointsSettings = Static<typeof PointsSettings>;

/** A change to the settings: each field left out stays as it is. */
export const PointsSettingsInput = Type.Object(
  { points_label: Type.Optional(PointsLabel), points_expiry: Type.Optional(PointsExpiry) },
  { additionalProperties: false },
);
export type PointsSettingsInput = Static<typeof PointsSettingsInput>;

export const DEFAULT_POINTS_SETTINGS: PointsSettings = {
  points_label: { one: 'Point', other: 'Points' },
  points_expiry: null,
};

export const PointsSettingsResponse = Type.Object({ points_settings: PointsSettings });
