import { type Static, Type } from 'typebox';

export const CUSTOMER_LIMITS = {
  emailLength: 254,
  nameLength: 255,
} as const;

// PostgreSQL refuses U+0000 in text values; refusing it here keeps both engines alike (a 400,
// never a 500). Email addresses cannot contain it: their format already excludes it.
export const NO_NUL = '^[^\\u0000]*$';

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

/** A customer as the CLI shows it. */
export interface Customer {
  id: number;
  email: string;
  first_name: string | null;
  last_name: string | null;
}
