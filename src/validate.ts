import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { Static, TSchema } from 'typebox';
import { DomainError } from './errors.js';
import { detailsOf, refusedSchemas, type SchemaIssue } from './validation-details.js';

const ajv = addFormats.default(new Ajv({ allErrors: true, strict: false, removeAdditional: false }));
const compiled = new WeakMap<TSchema, ReturnType<Ajv['compile']>>();

/**
 * Checks a value from outside HTTP (a CLI file) against a route's own schema, so both front
 * doors accept exactly the same input. Throws `invalid_parameter` naming each failing field.
 */
export function validate<T extends TSchema>(schema: T, value: unknown, root: string): Static<T> {
  let check = compiled.get(schema);
  if (!check) {
    check = refusedSchemas(ajv.compile(schema), schema);
    compiled.set(schema, check);
  }
  if (check(value)) return value as Static<T>;
  const details = detailsOf((check.errors ?? []) as SchemaIssue[], { prefix: root, whole: root });
  const first = details[0];
  throw new DomainError('invalid_parameter', first ? `${first.field} ${first.message}` : `${root} is invalid`, details);
}
