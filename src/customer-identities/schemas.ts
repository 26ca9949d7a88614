import { type Static, Type } from 'typebox';
import { CUSTOMER_LIMITS, EmailAddress, Name, NO_NUL } from '../customers/schemas.js';
import { PROPERTIES_LIMITS, Properties as PropertiesSchema } from '../properties.js';

/** The contract's bounds, named once for the schemas, the service and the tests. */
export const LIMITS = {
  ...CUSTOMER_LIMITS,
  distinctIdLength: 255,
  propertiesBytes: PROPERTIES_LIMITS.bytes,
  propertiesDepth: PROPERTIES_LIMITS.depth,
} as const;

const Properties = PropertiesSchema(
  'Free-form properties. On update they are merged key by key: a key sent with null is removed, ' +
    'keys not sent are kept; nested values are replaced whole. At most 16 KiB as compact JSON ' +
    '(also after merging) and at most 5 levels deep (this object is level 1; each nested object or ' +
    'array adds a level).',
);

export const CustomerIdentityInput = Type.Object(
  {
    distinct_id: Type.String({
      minLength: 1,
      maxLength: LIMITS.distinctIdLength,
      pattern: NO_NUL,
      description: 'Identifier of the record in the external system; compared exactly (case and spaces count)',
    }),
    email: EmailAddress,
    first_name: Type.Optional(Name('Given name; null clears it')),
    last_name: Type.Optional(Name('Family name; null clears it')),
    properties: Type.Optional(Properties),
  },
  { additionalProperties: false },
);
export type CustomerIdentityInput = Static<typeof CustomerIdentityInput>;

/** The example create_or_update body: in the OpenAPI document and in the demo's curl line. */
export const CREATE_OR_UPDATE_EXAMPLE = {
  customer_identity: {
    distinct_id: 'crm-1001',
    email: 'jane@example.com',
    first_name: 'Jane',
    last_name: 'Doe',
    properties: { plan: 'gold' },
  },
};

export const CreateOrUpdateBody = Type.Object(
  { customer_identity: CustomerIdentityInput },
  { additionalProperties: false, examples: [CREATE_OR_UPDATE_EXAMPLE] },
);
export type CreateOrUpdateBody = Static<typeof CreateOrUpdateBody>;

export const CustomerIdentity = Type.Object({
  id: Type.Integer({ description: 'Identifier of the customer identity' }),
  first_name: Type.Union([Type.String(), Type.Null()]),
  last_name: Type.Union([Type.String(), Type.Null()]),
  email: Type.String({ description: 'The e-mail address as last sent (trimmed)' }),
  distinct_id: Type.String(),
  properties: Properties,
  customer_id: Type.Integer({ description: 'Identifier of the customer linked to the identity; never changes' }),
});
export type CustomerIdentity = Static<typeof CustomerIdentity>;

/** The response, with the identity named `CustomerIdentity` for the OpenAPI document. */
export const CustomerIdentityResponse = Type.Object({
  customer_identity: {
    ...CustomerIdentity,
    $id: 'CustomerIdentity',
    description: 'A record of an external system (a CRM, a shop), linked to one customer by email',
    examples: [
      {
        id: 42,
        first_name: 'Jane',
        last_name: 'Doe',
        email: 'jane@example.com',
        distinct_id: 'crm-1001',
        properties: { plan: 'gold' },
        customer_id: 7,
      },
    ],
  },
});
export type CustomerIdentityResponse = Static<typeof CustomerIdentityResponse>;
