import { type Static, Type } from 'typebox';
import { Id } from '../common-schemas.js';

/**
 * Any console form: each field once or repeated (checkboxes), none longer than the API accepts
 * anywhere. The fields themselves are checked by the services' own schemas, with the API's
 * messages; this only bounds what is read.
 */
export const FormBody = Type.Record(
  Type.String({ maxLength: 200 }),
  Type.Union([Type.String({ maxLength: 10_000 }), Type.Array(Type.String({ maxLength: 10_000 }), { maxItems: 100 })]),
);
export type FormBody = Static<typeof FormBody>;

export const IdParams = Type.Object({ id: Id('Identifier') });

/** A list page's cursor, as the API's lists take it. */
export const PageQuery = Type.Object({
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  notice: Type.Optional(Type.String({ maxLength: 50 })),
});
