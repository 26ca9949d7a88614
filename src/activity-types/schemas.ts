import { type Static, Type } from 'typebox';
import { Text } from '../common-schemas.js';

/** `activity_` and random base62 characters (the contract asks for at least 14). */
export const ACTIVITY_TOKEN_PREFIX = 'activity_';
export const ACTIVITY_TOKEN_RANDOM_CHARS = 20;

/** What a customer can do that an integrator reports (places an order, writes a review). */
export interface ActivityType {
  id: number;
  name: string;
  /** What integrators send in `POST /v1/activities`. An identifier, not a secret. */
  token: string;
}

export const ActivityTypeInput = Type.Object(
  { name: Text('What the customer does, such as "Place an order"') },
  { additionalProperties: false },
);
export type ActivityTypeInput = Static<typeof ActivityTypeInput>;
