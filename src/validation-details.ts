import type { ErrorDetail } from './errors.js';

/** The parts of an Ajv error the details are made from (Fastify passes these on too). */
export interface SchemaIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
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
  for (const issue of issues) {
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
  return issue.message ?? 'is invalid';
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
