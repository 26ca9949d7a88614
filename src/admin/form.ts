import type { DomainError, ErrorCode, ErrorDetail } from '../errors.js';

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

/** What a point is called in one account (`Coin`, `Coins`). */
export interface PointsLabel {
  one: string;
  other: string;
}

/** `1 Coin`, `1,500 Coins`: an amount in the account's labels. */
export function pointsText(n: number, label: PointsLabel): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? label.one : label.other}`;
}

/** How a form's refusals are worded: its fields' labels, which count points, and its refusals. */
export interface FormWording {
  /** Each field's label as the page shows it: the summary names fields by these. */
  labels?: Readonly<Record<string, string>>;
  /** Fields that count points: their messages use the account's points label. */
  pointFields?: readonly string[];
  /**
   * Refusals of a whole input that concern one field (`insufficient_points`: the points to
   * remove), shown there in the console's words, or in these when given.
   */
  refusals?: Partial<Record<ErrorCode, { field: string; message?: string | ((label: PointsLabel) => string) }>>;
}

/** Validation messages by form field, and those that name no field of the form. */
export interface FormErrors {
  summary: string;
  /** The message shown next to each field. */
  fields: Record<string, string>;
  /** The summary's lines, in order: those with a field link to it. */
  items: Array<{ field?: string; label?: string; message: string }>;
  other: string[];
}

/** The console's words for a refusal of the whole input, where the form gives none. */
const REFUSALS: Partial<Record<ErrorCode, (label: PointsLabel) => string>> = {
  insufficient_points: (label) =>
    `That removes more ${label.other} than the customer has: the balance cannot go below 0. Nothing was changed.`,
  customer_not_member: (label) =>
    `Only members earn and spend ${label.other}: make the customer a member first (State in the program).`,
};

/**
 * The messages of a refused input in a merchant's words, each next to its field. A detail's field
 * is `root.path`, and the form's field for it is `path` (or its nearest parent the form has:
 * `reward_value.fixed` is shown at `reward_value.fixed.value` when the form has no such field).
 * The API's own messages ("must be integer") stay the API's; the console rewords them here.
 */
export function formErrors(
  error: DomainError,
  root: string,
  fieldNames: readonly string[],
  wording: FormWording = {},
  points: PointsLabel = { one: 'point', other: 'points' },
): FormErrors {
  const details: ErrorDetail[] = error.details ?? [];
  const fields: Record<string, string> = {};
  const other: string[] = [];
  const known = new Set(fieldNames);
  const labels = wording.labels ?? {};
  for (const detail of details) {
    const path = detail.field.startsWith(`${root}.`) ? detail.field.slice(root.length + 1) : detail.field;
    const field = nearestField(path, known);
    if (field === null) {
      other.push(humanMessage(detail.message, { labels, points: null }, labels[path] ?? path));
    } else {
      const counts = wording.pointFields?.includes(field) ? points : null;
      fields[field] ??= humanMessage(detail.message, { labels, points: counts });
    }
  }
  const refusal = wording.refusals?.[error.code];
  if (details.length === 0 && refusal && known.has(refusal.field)) {
    const given = refusal.message;
    const words = typeof given === 'function' ? given(points) : (given ?? REFUSALS[error.code]?.(points));
    fields[refusal.field] = words ?? sentence(error.message);
  } else if (details.length === 0) {
    other.push(REFUSALS[error.code]?.(points) ?? sentence(error.message));
  }
  const items = [
    ...Object.entries(fields).map(([field, message]) => ({
      field,
      label: labels[field] ?? fieldLabel(field),
      message,
    })),
    ...other.map((message) => ({ message })),
  ];
  const count = items.length;
  return {
    summary: `The form has ${count} ${count === 1 ? 'error' : 'errors'}: nothing was saved.`,
    fields,
    items,
    other,
  };
}

const COMPARISONS: Record<string, string> = { '>=': 'at least', '>': 'more than', '<=': 'at most', '<': 'less than' };

/**
 * A validation message of the API ("must be integer", "must be >= 1") as a sentence for a
 * person ("Enter a whole number of Coins, such as 50."). Messages the API words for people
 * already (a service's own checks) keep their words, with field names replaced by labels.
 */
export function humanMessage(
  message: string,
  context: { labels: Readonly<Record<string, string>>; points: PointsLabel | null },
  field?: string,
): string {
  const prefix = field === undefined ? '' : `${fieldLabel(field)}: `;
  const points = context.points;
  if (message === 'is required' || /^must NOT have fewer than 1 characters?$/.test(message)) {
    return `${prefix}This is required.`;
  }
  // A nullable number's ("must be integer or null"): the form's empty field is null already.
  if (message === 'must be integer' || message === 'must be integer or null') {
    return `${prefix}Enter a whole number${points ? ` of ${points.other}` : ''}, such as ${points ? '50' : '5'}.`;
  }
  if (message === 'must be number' || message === 'must be number or null')
    return `${prefix}Enter a number, such as 5 or 2.5.`;
  // A referral reward given as points, without the points (referral-settings/service.ts).
  const given = /^is required when fulfillment is points \((\d+) to (\d+)\)$/.exec(message);
  if (given) {
    const [low, high] = [Number(given[1]), Number(given[2])].map((n) => n.toLocaleString('en-US'));
    return `${prefix}Enter how many ${points ? points.other : 'points'} to give, from ${low} to ${high}.`;
  }
  const bound = /^must be (>=|>|<=|<) (-?[\d.e+]+)$/.exec(message);
  if (bound) {
    const n = Number(bound[2]);
    const amount = points && Number.isInteger(n) ? pointsText(n, points) : n.toLocaleString('en-US');
    return `${prefix}Enter ${COMPARISONS[bound[1]!]} ${amount}.`;
  }
  const long = /^must NOT have more than (\d+) characters?$/.exec(message);
  if (long) return `${prefix}Use at most ${Number(long[1]).toLocaleString('en-US')} characters.`;
  if (message === 'must match format "uri"' || message === 'must match pattern "^https?://"') {
    return `${prefix}Enter a web address that starts with https:// (or http://).`;
  }
  if (message === 'must match format "email"') return `${prefix}Enter an email address, such as name@example.com.`;
  if (/^must be equal to (one of the allowed values|constant)$/.test(message) || message === 'must be boolean') {
    return `${prefix}Choose one of the options.`;
  }
  if (/^names no activity type of /.test(message)) return `${prefix}Choose one of this account’s activity types.`;
  if (/^names no VIP tier of /.test(message)) return `${prefix}Choose among this account’s VIP tiers.`;
  if (/^must be one of /.test(message)) return `${prefix}Choose one of the options.`;
  if (/^is already the email of customer /.test(message)) {
    return `${prefix}This account already has a customer with this email.`;
  }
  if (/^is already the name of an activity type/.test(message)) {
    return `${prefix}This account already has an activity type with this name: choose another name.`;
  }
  // A service's own words ("must be a multiple of variable_points_step (5)"): the field names in
  // them become the labels the page shows.
  let text = message;
  // Only identifiers (`variable_points_step`, `reward.image_url`), as whole words: a plain word
  // like `name` is English too ("must name at least one scope").
  for (const [name, label] of Object.entries(context.labels)) {
    const last = name.split('.').pop()!;
    for (const identifier of [name, last]) {
      if (!/[._]/.test(identifier)) continue;
      const escaped = identifier.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      text = text.replace(new RegExp(`(?<![\\w.])${escaped}(?![\\w])`, 'g'), `“${label}”`);
    }
  }
  // "must be a multiple of …", "is required: say why": a sentence about the field.
  return `${prefix}${/^(must|is|names|has|cannot) /.test(text) ? `This ${sentence(text).replace(/^./, (c) => c.toLowerCase())}` : sentence(text)}`;
}

/** Capitalised, ending with a full stop. */
function sentence(text: string): string {
  const trimmed = text.trim();
  const capital = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** A field's name as words when the form gives no label: `reward.image_url` → `Image url`. */
function fieldLabel(field: string): string {
  return sentence(field.split('.').pop()!.replaceAll('_', ' ')).slice(0, -1);
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
