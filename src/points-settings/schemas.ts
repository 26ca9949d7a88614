import { type Static, Type } from 'typebox';
import { Text } from '../common-schemas.js';

/** The account's points currency: what a point is called, in the singular and otherwise. */
export const PointsSettings = Type.Object(
  {
    points_label: Type.Object(
      {
        one: Text('The singular unit for a point (1 Coin)', 64),
        other: Text('The unit for zero or many points (0 Coins, 5 Coins)', 64),
      },
      { additionalProperties: false, description: "The branding of the account's points currency" },
    ),
  },
  {
    $id: 'PointsSettings',
    description: 'What the account calls its points',
    additionalProperties: false,
    examples: [{ points_label: { one: 'Coin', other: 'Coins' } }],
  },
);
export type PointsSettings = Static<typeof PointsSettings>;

export const DEFAULT_POINTS_SETTINGS: PointsSettings = { points_label: { one: 'Point', other: 'Points' } };

export const PointsSettingsResponse = Type.Object({ points_settings: PointsSettings });
