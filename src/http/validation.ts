import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { refusedSchemas } from '../validation-details.js';

const common: Options = {
  allErrors: true,
  useDefaults: true,
  // Fastify's default silently drops unknown fields; the contract refuses them by name.
  removeAdditional: false,
  strict: false,
};

/**
 * Two validators: query strings and path parameters arrive as text and are coerced
 * (`?limit=10`), bodies are JSON and are not (`"distinct_id": 5` is a wrong type, not "5").
 */
export function registerValidators(app: FastifyInstance): void {
  const coercing = addFormats.default(new Ajv({ ...common, coerceTypes: true }));
  const exact = addFormats.default(new Ajv({ ...common, coerceTypes: false }));
  app.setValidatorCompiler(({ schema, httpPart }) =>
    refusedSchemas((httpPart === 'body' ? exact : coercing).compile(schema), schema),
  );
}
