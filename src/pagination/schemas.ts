import { Type } from 'typebox';

export const MAX_LIMIT = 250;
export const DEFAULT_LIMIT = 50;

export const PageMetadata = Type.Object(
  {
    next_cursor: Type.String({ description: 'Cursor of the next (older) page; "" when there is none' }),
    previous_cursor: Type.String({ description: 'Cursor of the previous (newer) page; "" when there is none' }),
  },
  { $id: 'PageMetadata', description: 'The cursors of the pages around this one' },
);

/** `limit` and `cursor`, the same on every list. */
export const pageParams = (items: string) => ({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_LIMIT,
      default: DEFAULT_LIMIT,
      description: `Most ${items} to return, 1 to 250 (default 50)`,
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        '`next_cursor` or `previous_cursor` of an earlier response; omit for the first page. ' +
        'An empty value is refused (`""` in metadata means there is no such page).',
    }),
  ),
});

/** The `updated_at_min` filter of a list. */
export const UpdatedAtMin = (items: string) =>
  Type.Optional(
    Type.String({
      format: 'date-time',
      maxLength: 64,
      description: `Only ${items} updated at or after this time (ISO 8601 date-time with an offset, such as 2026-01-31T00:00:00Z)`,
    }),
  );
