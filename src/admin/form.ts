import type { DomainError, ErrorDetail } from '../errors.js';

/** A decoded form body: each field once (a string) or repeated (checkboxes: an array). */
export type FormBody = Record<string, string | string[] | undefined>;

const NUMBER = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

/**
 * Reads a form into the JSON input a service takes. Fields are named by their path in that
 * input (`reward_value.fixed.value`), so a validation error's field names the input it is about.
 * A number field that is not a number is passed on as typed, and the service's schema refuses it
 * with the API's message; an empty optional field is left out.
 */
export class Form {
  constructor(readonly body: FormBody) {}

  /** The field's text ('' when absent; the first value when repeated). */
  text(name: string): string {
    const value = this.body[name];
    return (Array.isArray(value) ? value[0] : value) ?? '';
  }

  /** The field's text, or undefined when it is empty. */
  optional(name: string): string | undefined {
    const value = this.text(name);
    return value === '' ? undefined : value;
  }

  /** The field as a number when it reads as one, else as typed (undefined when empty). */
  number(name: string): number | string | undefined {
    const value = this.text(name).trim();
    if (value === '') return undefined;
    return NUMBER.test(value) ? Number(value) : value;
  }

  /** Every value of a repeated field (checked checkboxes). */
  all(name: string): string[] {
    const value = this.body[name];
    if (value === undefined) return [];
    return Array.isArray(value) ? value : [value];
  }

  /** True when a checkbox was checked. */
  checked(name: string): boolean {
    return this.body[name] !== undefined;
  }
}

/** Validation messages by form field, and those that name no field of the form. */
export interface FormErrors {
  summary: string;
  fields: Record<string, string>;
  other: string[];
}

/**
 * The messages of a refused input, each next to its field: a detail's field is `root.path`, and
 * the form's field for it is `path` (or its nearest parent the form has: `reward_value.fixed`
 * is shown at `reward_value.fixed.value`'s parent when the form has no such field).
 */
export function formErrors(error: DomainError, root: string, fieldNames: readonly string[]): FormErrors {
  const details: ErrorDetail[] = error.details ?? [];
  const fields: Record<string, string> = {};
  const other: string[] = [];
  const known = new Set(fieldNames);
  for (const detail of details) {
    const path = detail.field.startsWith(`${root}.`) ? detail.field.slice(root.length + 1) : detail.field;
    const field = nearestField(path, known);
    if (field === null) other.push(`${path}: ${detail.message}`);
    else fields[field] ??= detail.message;
  }
  if (details.length === 0) other.push(error.message);
  const count = Object.keys(fields).length + other.length;
  return { summary: `The form has ${count} ${count === 1 ? 'error' : 'errors'}: nothing was saved.`, fields, other };
}

/** `path`, or the nearest enclosing path that is a field of the form, or a field inside it. */
function nearestField(path: string, known: Set<string>): string | null {
  if (known.has(path)) return path;
  const parts = path.split('.');
  for (let end = parts.length - 1; end > 0; end--) {
    const parent = parts.slice(0, end).join('.');
    if (known.has(parent)) return parent;
  }
  for (const name of known) if (name.startsWith(`${path}.`)) return name;
  return null;
}

/** A stored object as form values: `{ reward_value: { fixed: { value: 5 } } }` → `reward_value.fixed.value = "5"`. */
export function flatten(value: unknown, prefix = '', into: FormBody = {}): FormBody {
  if (value === null || value === undefined) return into;
  if (Array.isArray(value)) {
    into[prefix] = value.map(String);
  } else if (typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) flatten(inner, prefix === '' ? key : `${prefix}.${key}`, into);
  } else {
    into[prefix] = String(value);
  }
  return into;
}
