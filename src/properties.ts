import { Type } from 'typebox';
import { invalidParameter } from './errors.js';

// Free-form `properties` objects (customer identities, activities): one schema and one set of
// bounds, checked the same way wherever they are accepted.

export const PROPERTIES_LIMITS = {
  /** Bytes of the compact JSON serialisation (`JSON.stringify`). */
  bytes: 16 * 1024,
  /** The `properties` object itself is level 1; each nested object or array adds one. */
  depth: 5,
} as const;

// `additionalProperties: true` (rather than a Record's patternProperties) reads as a free-form
// object in OpenAPI and makes the serialiser copy every key.
export const Properties = (description: string) =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description });

/** The contract's bounds on a properties object: depth first, so a deep value is never walked whole. */
export function checkProperties(properties: Record<string, unknown>, field: string, when = ''): void {
  if (jsonDepth(properties, PROPERTIES_LIMITS.depth) > PROPERTIES_LIMITS.depth) {
    throw invalidParameter(
      field,
      `must be at most ${PROPERTIES_LIMITS.depth} levels deep${when} (the properties object is level 1)`,
    );
  }
  const bytes = Buffer.byteLength(JSON.stringify(properties), 'utf8');
  if (bytes > PROPERTIES_LIMITS.bytes) {
    throw invalidParameter(
      field,
      `must be at most ${PROPERTIES_LIMITS.bytes} bytes (16 KiB) as JSON${when}, got ${bytes}`,
    );
  }
}

/**
 * Nesting depth of a JSON value: 0 for a scalar, 1 plus the deepest member for an object or
 * array. Stops descending once the depth passes `limit`, so hostile nesting costs little.
 */
export function jsonDepth(value: unknown, limit: number): number {
  if (value === null || typeof value !== 'object') return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const member of Object.values(value)) {
    deepest = Math.max(deepest, jsonDepth(member, limit - 1));
    if (deepest >= limit) break;
  }
  return 1 + deepest;
}
