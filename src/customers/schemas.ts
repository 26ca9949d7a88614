import { type Static, Type } from 'typebox';
import { Id, NO_NUL, NullableInteger, StringEnum } from '../common-schemas.js';
import { PageMetadata, pageParams, UpdatedAtMin } from '../pagination/schemas.js';

export const CUSTOMER_LIMITS = {
  emailLength: 254,
  nameLength: 255,
} as const;

export { NO_NUL };

export const Name = (description: string) =>
  Type.Union([Type.String({ maxLength: CUSTOMER_LIMITS.nameLength, pattern: NO_NUL }), Type.Null()], { description });

export const EmailAddress = Type.String({
  format: 'email',
  maxLength: CUSTOMER_LIMITS.emailLength,
  description:
    'E-mail address. Surrounding whitespace is trimmed before it is checked and stored; customers are ' +
    'matched on it case-insensitively.',
});

/** What `loyalty customers create` accepts: the same email and name rules as an identity. */
export const CustomerInput = Type.Object(
  {
    email: EmailAddress,
    first_name: Type.Optional(Name('Given name')),
    last_name: Type.Optional(Name('Family name')),
  },
  { additionalProperties: false },
);
export type CustomerInput = Static<typeof CustomerInput>;

/** A customer as `loyalty customers create` and `list` show it. */
export interface CustomerSummary {
  id: number;
  email: string;
  first_name: string | null;
  last_name: string | null;
}

export const CUSTOMER_STATES = ['candidate', 'member', 'disabled'] as const;
export const CustomerStateSchema = StringEnum(
  CUSTOMER_STATES,
  'State in the loyalty program: only members earn and spend points',
);

const NullableTime = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });

/** The customer's place in the account's VIP program (engine-contract.md, "VIP periods"). */
export const VipStatus = Type.Object(
  {
    vip_tier_id: NullableInteger('Current VIP tier, or null'),
    vip_tier_expires_at: NullableTime(
      'The last instant the tier is held unless more is earned: in a calendar-year program the end of the year ' +
        'after the one whose points reached it; in a rolling program the end of the day enough points leave the ' +
        '12 months to take progress below its milestone. Null without a tier, or in an all-time program',
    ),
    progress_value: Type.Integer({
      description:
        'Points earned in the current VIP period: all time (spending never lowers it), this calendar year (UTC), ' +
        'or the last 12 months',
    }),
    current_vip_period_end: NullableTime(
      'The last instant of this calendar year in a calendar-year program; null otherwise (an all-time program has ' +
        'no periods, a rolling one always ends now)',
    ),
    delta_to_retain_vip_tier: NullableInteger(
      'Points still to earn before vip_tier_expires_at to keep the tier past it; null when nothing more is needed, ' +
        'without a tier, or in an all-time program',
    ),
    next_vip_tier_id: NullableInteger(
      'The tier with the lowest milestone above both the current tier and the progress, or null',
    ),
    delta_to_next_vip_tier: NullableInteger('Points still to earn in this period to reach the next tier, or null'),
  },
  { $id: 'VipStatus', description: "A customer's place in the account's VIP program" },
);
export type VipStatus = Static<typeof VipStatus>;

/** A customer as the API returns it (the reference's Customer). */
export const Customer = Type.Object(
  {
    id: Type.Integer({ description: 'Identifier of the customer' }),
    first_name: Type.Union([Type.String(), Type.Null()], { description: 'Given name' }),
    last_name: Type.Union([Type.String(), Type.Null()], { description: 'Family name' }),
    email: Type.String({ description: 'E-mail address' }),
    state: CustomerStateSchema,
    date_of_birth: Type.Union([Type.String({ format: 'date' }), Type.Null()], { description: 'Birthday, or null' }),
    points_balance: Type.Integer({
      description: 'Current points balance: the sum of the points transactions, never below 0',
    }),
    points_expire_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description:
        "When the whole balance expires unless the customer earns, spends or does something before (the points settings' " +
        "`points_expiry` after their last points transaction or activity); null without expiry, with a balance of 0, or for a customer who is not a member (only members' balances expire)",
    }),
    referral_url: Type.Union([Type.String(), Type.Null()], { description: 'Referral URL, or null' }),
    vip_tier_id: NullableInteger('Current VIP tier (deprecated: read vip_status.vip_tier_id)'),
    vip_status: VipStatus,
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time', description: 'Last change, a points balance change included' }),
  },
  {
    $id: 'Customer',
    description: 'A customer of the loyalty program, with points balance and VIP status',
    examples: [
      {
        id: 7,
        first_name: 'Jane',
        last_name: 'Doe',
        email: 'jane@example.com',
        state: 'member',
        date_of_birth: null,
        points_balance: 320,
        points_expire_at: null,
        referral_url: null,
        vip_tier_id: 2,
        vip_status: {
          vip_tier_id: 2,
          vip_tier_expires_at: null,
          progress_value: 520,
          current_vip_period_end: null,
          delta_to_retain_vip_tier: null,
          next_vip_tier_id: 3,
          delta_to_next_vip_tier: 480,
        },
        created_at: '2026-01-02T10:00:00.000Z',
        updated_at: '2026-01-05T16:30:00.000Z',
      },
    ],
  },
);
export type Customer = Static<typeof Customer>;

export const CustomerResponse = Type.Object({ customer: Customer });

export const CustomersPage = Type.Object(
  { customers: Type.Array(Customer), metadata: PageMetadata },
  { description: 'A page of customers, id descending' },
);
export type CustomersPage = Static<typeof CustomersPage>;

const Include = Type.Optional(
  Type.String({ maxLength: 200, description: 'Accepted for compatibility; vip_status is always included' }),
);

export const CustomersQuery = Type.Object({
  ...pageParams('customers'),
  email: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: CUSTOMER_LIMITS.emailLength + 100,
      description: 'Only the customer with this email (matched case-insensitively, after trimming)',
    }),
  ),
  state: Type.Optional(CustomerStateSchema),
  updated_at_min: UpdatedAtMin('customers'),
  include: Include,
});
export type CustomersQuery = Static<typeof CustomersQuery>;

export const CustomerQuery = Type.Object({ include: Include });

export const CustomerParams = Type.Object({ id: Id('Identifier of the customer') });
