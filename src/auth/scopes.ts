import { invalidParameter } from '../errors.js';

/** Every scope of the API, with the words shown to a merchant on the consent page. */
export const SCOPE_DESCRIPTIONS = {
  'referral_settings:read': 'Read your referral program settings',
  'earning_rule:read': 'Read your earning rules',
  'customer_identity:write': 'Create and update customer identities (links to your customers)',
  'customer:read': 'Read your customers, their points balances and VIP tiers',
  'activity:write': 'Record what your customers do (activities), which earns them points',
  'points_transaction:read': "Read your customers' points transactions",
  'points_transaction:write': "Add and remove points from your customers' balances",
  'vip_tier:read': 'Read your VIP tiers',
  'points_settings:read': 'Read your points settings',
  'points_product:read': 'Read the rewards you sell for points (points products)',
  'points_purchase:write': "Spend your customers' points on rewards, issuing reward codes",
  'reward_fulfillment:read': 'Read the rewards issued to your customers, with their codes',
  'reward_fulfillment:write':
    "Mark your customers' reward codes used, and cancel unused ones (giving their points back)",
  'referral:read': 'Read your referrals: who referred whom, and the rewards of both',
  'referral:write': "Refer friends with your customers' referral codes, rewarding them",
  'event:read': 'Read the events of your program (what happened), limited to what the other scopes can read',
  'webhook_endpoint:read': 'Read your webhook endpoints and their delivery logs',
  'webhook_endpoint:write': 'Create, change and delete webhook endpoints, which are sent your events',
} as const;

export type Scope = keyof typeof SCOPE_DESCRIPTIONS;

export const ALL_SCOPES = Object.keys(SCOPE_DESCRIPTIONS) as Scope[];

export function isScope(name: string): name is Scope {
  return Object.hasOwn(SCOPE_DESCRIPTIONS, name);
}

/**
 * Parses a space- (or comma-) separated scope list. Unknown names are refused; a missing list
 * means `fallback`, but a list given empty (`--scopes ""`) is refused rather than read as
 * "everything". The result is deduplicated and in the canonical order.
 */
export function parseScopes(input: string | readonly string[] | undefined, fallback: readonly Scope[]): Scope[] {
  if (input === undefined) return [...fallback];
  const names = (typeof input === 'string' ? input.split(/[\s,]+/) : input).filter(Boolean);
  if (names.length === 0) {
    throw invalidParameter(
      'scopes',
      `must name at least one scope (omit it for the default); known scopes: ${ALL_SCOPES.join(', ')}`,
    );
  }
  const unknown = names.filter((name) => !isScope(name));
  if (unknown.length > 0) {
    throw invalidParameter(
      'scopes',
      `has unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; known scopes: ${ALL_SCOPES.join(', ')}`,
    );
  }
  return ALL_SCOPES.filter((scope) => names.includes(scope));
}

/** Reads the stored (space-separated, already validated) form. */
export function decodeScopes(stored: string): Scope[] {
  return stored.split(' ').filter(isScope);
}

export function encodeScopes(scopes: readonly Scope[]): string {
  return scopes.join(' ');
}

/** True when `held` grants `required`: the scope itself, or `resource:write` for `resource:read`. */
export function grants(held: readonly Scope[], required: Scope): boolean {
  if (held.includes(required)) return true;
  const [resource, action] = required.split(':');
  return action === 'read' && held.some((scope) => scope === `${resource}:write`);
}
