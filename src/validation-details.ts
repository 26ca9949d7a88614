import type { ErrorDetail } from './errors.js';

/** The parts of an Ajv error the details are made from (Fastify passes these on too). */
export interface SchemaIssue {
  instancePath: string;
  /** Where in the schema it failed (Ajv's JSON pointer, `#/properties/…`). */
  schemaPath?: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** What `refusedSchemas` adds to the params of a `not` or `oneOf` issue: the schema that refused. */
const REFUSED = 'refusedSchema';

/**
 * A validator whose `not` and `oneOf` failures carry the schema that refused the value, which Ajv
 * reports only with `verbose` (and with it the value itself, a password included): "must NOT be
 * valid" becomes "must not be 0", and "must match exactly one schema in oneOf" names the fields.
 */
export function refusedSchemas<V extends ((data: unknown) => boolean | Promise<unknown>) & { errors?: unknown }>(
  validate: V,
  root: unknown,
): V {
  const wrapped = ((data: unknown) => {
    const valid = validate(data);
    const issues = validate.errors as SchemaIssue[] | null | undefined;
    wrapped.errors = issues ? issues.map((issue) => withRefusedSchema(issue, root)) : issues;
    return valid;
  }) as V;
  return Object.assign(wrapped, validate, { errors: null });
}

function withRefusedSchema(issue: SchemaIssue, root: unknown): SchemaIssue {
  if ((issue.keyword !== 'not' && issue.keyword !== 'oneOf') || !issue.schemaPath) return issue;
  return { ...issue, params: { ...issue.params, [REFUSED]: at(root, issue.schemaPath) } };
}

/** The value at a JSON pointer such as `#/properties/activity/oneOf`, or undefined. */
function at(root: unknown, pointer: string): unknown {
  let node = root;
  for (const segment of pointer.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[unescapePointer(decodeURIComponent(segment))];
  }
  return node;
}

/**
 * The contract's `details` for a schema failure: one entry per field, named by its dotted path
 * under `root` (the value itself when the path is empty). A union (`string` or `null`) fails with
 * one issue per branch plus an `anyOf` summary, which read better as one message ("must be
 * string or null"); an if/then failure is reported by the failing keyword inside `then`, so the
 * `if` issue is dropped. Shared by HTTP validation and `validate()` for the CLI, so both front
 * doors describe a bad input the same way.
 */
export function detailsOf(issues: readonly SchemaIssue[], root: { prefix?: string; whole: string }): ErrorDetail[] {
  const byField = new Map<string, SchemaIssue[]>();
  for (const issue of withAlternatives(issues)) {
    if (issue.keyword === 'if') continue;
    const field = fieldOf(issue, root);
    byField.set(field, [...(byField.get(field) ?? []), issue]);
  }
  return [...byField].map(([field, group]) => {
    const branches = group.filter((issue) => issue.keyword !== 'anyOf');
    const types = branches.filter((issue) => issue.keyword === 'type').map((issue) => String(issue.params.type));
    const message =
      group.some((issue) => issue.keyword === 'anyOf') && types.length === branches.length && types.length > 1
        ? `must be ${types.join(' or ')}`
        : messageOf(branches[0] ?? (group[0] as SchemaIssue));
    return { field, message };
  });
}

function fieldOf(issue: SchemaIssue, root: { prefix?: string; whole: string }): string {
  const path = issue.instancePath.split('/').filter(Boolean).map(unescapePointer);
  const named = issue.params.missingProperty ?? issue.params.additionalProperty;
  if (typeof named === 'string') path.push(named);
  if (root.prefix !== undefined) path.unshift(root.prefix);
  return path.length === 0 ? root.whole : path.join('.');
}

function messageOf(issue: SchemaIssue): string {
  if (issue.keyword === 'additionalProperties') return 'is not a known field';
  if (issue.keyword === 'required') return 'is required';
  if (issue.keyword === 'enum' && Array.isArray(issue.params.allowedValues)) {
    return `must be one of ${issue.params.allowedValues.map(String).join(', ')}`;
  }
  if (issue.keyword === 'not') {
    const refused = issue.params[REFUSED] as { const?: unknown } | undefined;
    return refused && 'const' in refused ? `must not be ${JSON.stringify(refused.const)}` : 'is not an allowed value';
  }
  return issue.message ?? 'is invalid';
}

/**
 * A `oneOf` of alternatives that each require one field ("exactly one of customer_id and
 * customer_email") is reported as one issue naming them, on the field to send or to leave out;
 * the branches' own issues ("customer_id is required", "customer_email is required") are dropped.
 * A value of the wrong type keeps only its type issue.
 */
function withAlternatives(issues: readonly SchemaIssue[]): SchemaIssue[] {
  const choices = issues.filter((issue) => issue.keyword === 'oneOf' && alternativesOf(issue).length > 1);
  if (choices.length === 0) return [...issues];
  const inBranch = (issue: SchemaIssue) =>
    choices.some((choice) => choice !== issue && issue.schemaPath?.startsWith(`${choice.schemaPath}/`));
  const mistyped = new Set(issues.filter((issue) => issue.keyword === 'type').map((issue) => issue.instancePath));
  return issues.flatMap((issue): SchemaIssue[] => {
    if (inBranch(issue)) return [];
    if (!choices.includes(issue)) return [issue];
    if (mistyped.has(issue.instancePath)) return [];
    const names = alternativesOf(issue);
    const choice = names.join(' and ');
    const both = Array.isArray(issue.params.passingSchemas);
    const field = both ? (names.at(-1) as string) : (names[0] as string);
    const message = both
      ? `must not be sent with ${names.slice(0, -1).join(' and ')}: send exactly one of ${choice}`
      : `is required: send exactly one of ${choice}`;
    return [{ ...issue, keyword: 'oneOf', params: { missingProperty: field }, message }];
  });
}

/** The fields of a `oneOf` whose every branch requires exactly one field, in branch order, else []. */
function alternativesOf(issue: SchemaIssue): string[] {
  const branches = issue.params[REFUSED];
  if (!Array.isArray(branches)) return [];
  const names = branches.map((branch) => (branch as { required?: unknown }).required);
  return names.every((required) => Array.isArray(required) && required.length === 1 && typeof required[0] === 'string')
    ? names.map((required) => (required as string[])[0] as string)
    : [];
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
