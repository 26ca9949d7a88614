import { type TObject, type TSchema, type TUnsafe, Type } from 'typebox';

// Field shapes several resources share, each with its bounds.

// PostgreSQL refuses U+0000 in text values; refusing it here keeps both engines alike (a 400,
// never a 500).
export const NO_NUL = '^[^\\u0000]*$';

/** A name or label: 1 to `maxLength` characters, no NUL. */
export const Text = (description: string, maxLength = 255) =>
  Type.String({ minLength: 1, maxLength, pattern: NO_NUL, description });

/** An absolute http(s) URL: `javascript:` or `data:` URLs would be clickable in a storefront widget. */
export const HttpUrl = (description: string) =>
  Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048, description });

/** A row id in a path or body: a positive integer JSON keeps exactly. */
export const Id = (description: string) => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

/** An integer, or null where the field does not apply. */
export const NullableInteger = (description: string) => Type.Union([Type.Integer(), Type.Null()], { description });

/**
 * One of a few strings, written as a plain `enum`: a generated client gets a union of literals and
 * a refusal reads "must be one of member, candidate, disabled" (an `anyOf` of constants would
 * report one "must be equal to constant" per value).
 */
export const StringEnum = <const Values extends string[]>(values: readonly [...Values], description?: string) =>
  Type.Enum(values, { type: 'string', ...(description === undefined ? {} : { description }) });

/** An instant as the API writes it: ISO 8601 in UTC with milliseconds. */
export const Timestamp = (description: string) => Type.String({ format: 'date-time', description });

/** The API form of a stored epoch-milliseconds time. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * One of `branches`, chosen by the value of their `field` constant (`type`, `exchange_type`), for
 * validating input. An `anyOf` would report every branch's failures ("variable is required" for a
 * bad fixed value); if/then reports only the failures of the branch the input names.
 */
export function byConstant<T>(field: string, branches: TObject[], options: { nullable?: boolean } = {}): TUnsafe<T> {
  const constantOf = (branch: TObject) => (branch.properties[field] as unknown as { const: string }).const;
  return Type.Unsafe<T>({
    type: options.nullable ? ['object', 'null'] : 'object',
    required: [field],
    properties: { [field]: { enum: branches.map(constantOf) } },
    // The condition is an object with that value, so null and a missing field apply no branch.
    allOf: branches.map((branch) =>
      Type.Dependent(Type.Object({ [field]: Type.Literal(constantOf(branch)) }), branch, Type.Unknown()),
    ),
  } as unknown as TSchema);
}
