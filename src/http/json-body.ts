import { DomainError, type ErrorDetail } from '../errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Parses a JSON request body, refusing what the two storage engines would keep differently or
 * what could reach an object's prototype, each refusal naming the field:
 * - bytes that are not UTF-8 (SQLite would store them, PostgreSQL refuse or fold them);
 * - strings with lone surrogates (`"\ud800"`: PostgreSQL folds several into U+FFFD, so two
 *   distinct ids would become one);
 * - numbers JSON.parse cannot keep (`1e400` becomes Infinity, stored as null; `1e-400` becomes 0);
 * - `__proto__` keys and `constructor.prototype`, refused as Fastify's default parser does, but
 *   saying which key.
 * An empty body is no body when `emptyIsNone` (the operation takes none, or one whose fields are
 * all optional: clients send `Content-Type: application/json` on every request); otherwise it is
 * refused, saying so.
 */
export function parseJsonBody(body: Buffer, emptyIsNone = false): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new DomainError('invalid_request', 'the request body is not valid UTF-8');
  }
  if (text.trim() === '') {
    if (emptyIsNone) return undefined;
    throw new DomainError('invalid_request', 'the request body is empty; a JSON object is required');
  }
  let value: unknown;
  try {
    // JSON.parse defines "__proto__" as an own key, never as the prototype: the walk below refuses it.
    value = JSON.parse(text);
  } catch {
    throw new DomainError('invalid_request', 'the request body is not valid JSON');
  }
  const { forbidden, malformed } = walk(value);
  if (forbidden) {
    throw new DomainError(
      'invalid_request',
      `the request body must not contain "__proto__" or "constructor.prototype" keys: found ${forbidden.field}`,
      [forbidden],
    );
  }
  const problem = unkeptNumber(text) ?? malformed;
  if (problem) throw new DomainError('invalid_parameter', `${problem.field} ${problem.message}`, [problem]);
  return value;
}

/** The dotted path of a value (the body itself is `body`). */
function fieldName(path: readonly (string | number)[]): string {
  return path.length === 0 ? 'body' : path.join('.');
}

const PROTOTYPE_KEY = 'is a forbidden key (it names the prototype of an object)';
const LONE_SURROGATE_MESSAGE = 'must be well-formed Unicode (it holds a lone surrogate)';

/** A place in the parsed body: its value, and the way back to the root for naming it. */
interface Place {
  value: unknown;
  parent: Place | null;
  key: string | number;
}

function pathOf(place: Place, ...more: (string | number)[]): string {
  const path: (string | number)[] = [];
  for (let at: Place | null = place; at?.parent; at = at.parent) path.unshift(at.key);
  return fieldName([...path, ...more]);
}

/**
 * Walks the parsed value without recursion (a body may nest 20,000 arrays deep) for the first
 * prototype key and the first string or key with a lone surrogate.
 */
function walk(root: unknown): { forbidden: ErrorDetail | null; malformed: ErrorDetail | null } {
  let malformed: ErrorDetail | null = null;
  const pending: Place[] = [{ value: root, parent: null, key: '' }];
  while (pending.length > 0) {
    const place = pending.pop() as Place;
    const { value } = place;
    if (typeof value === 'string') {
      if (!malformed && LONE_SURROGATE.test(value))
        malformed = { field: pathOf(place), message: LONE_SURROGATE_MESSAGE };
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push({ value: value[i], parent: place, key: i });
      continue;
    }
    const entries = Object.entries(value);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i] as [string, unknown];
      if (key === '__proto__') return { forbidden: { field: pathOf(place, key), message: PROTOTYPE_KEY }, malformed };
      if (key === 'constructor' && typeof child === 'object' && child !== null && 'prototype' in child) {
        return { forbidden: { field: pathOf(place, key, 'prototype'), message: PROTOTYPE_KEY }, malformed };
      }
      if (!malformed && LONE_SURROGATE.test(key)) {
        malformed = {
          field: pathOf(place, key),
          message: 'must be a well-formed Unicode key (it holds a lone surrogate)',
        };
      }
      pending.push({ value: child, parent: place, key });
    }
  }
  return { forbidden: null, malformed };
}

/**
 * Scans the number literals of valid JSON text, tracking where each lies, for one that
 * JSON.parse cannot keep: beyond the largest double, or non-zero but below the smallest.
 */
function unkeptNumber(text: string): ErrorDetail | null {
  // Each open container: an array with its current index, or an object with its current key.
  const stack: { array: boolean; at: string | number }[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '"') {
      const end = stringEnd(text, i);
      if (expectKey && stack.length > 0) {
        (stack[stack.length - 1] as { at: string | number }).at = JSON.parse(text.slice(i, end + 1)) as string;
        expectKey = false;
      }
      i = end;
    } else if (c === '{') {
      stack.push({ array: false, at: '' });
      expectKey = true;
    } else if (c === '[') {
      stack.push({ array: true, at: 0 });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.array) top.at = (top.at as number) + 1;
      else expectKey = true;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const literal = NUMBER.exec(text)?.[0] ?? c;
      const parsed = Number(literal);
      const mantissa = literal.split(/[eE]/)[0] as string;
      if (!Number.isFinite(parsed) || (parsed === 0 && /[1-9]/.test(mantissa))) {
        return {
          field: fieldName(stack.map((s) => s.at)),
          message: `must be a number JSON can represent (${literal.length > 40 ? `${literal.slice(0, 40)}…` : literal} is out of range)`,
        };
      }
      i += literal.length - 1;
    }
  }
  return null;
}

/** The index of the quote that closes the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  return text.length - 1;
}

/** Whether an operation whose body schema is `schema` reads an empty body as none (see parseJsonBody). */
export function takesEmptyBody(schema: unknown): boolean {
  if (schema === undefined) return true;
  const required = (schema as { required?: unknown }).required;
  return !Array.isArray(required) || required.length === 0;
}
