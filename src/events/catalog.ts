import { grants, type Scope } from '../auth/scopes.js';

/**
 * Every event type (docs/webhooks.md): what each tells, and the scope a credential needs to read
 * it (in the feed, or delivered to an app's endpoint). Types whose resource has no read scope of
 * its own need the scope that makes that resource: only what can record activities sees them.
 */
export const EVENT_TYPES = {
  'customer.created': {
    scope: 'customer:read',
    description: 'A customer was made (create_or_update, an activity, the CLI, the console).',
  },
  'customer.updated': {
    scope: 'customer:read',
    description: "A customer's state, name or email changed (not a balance change).",
  },
  'customer.points_expiring': {
    scope: 'customer:read',
    description:
      "A customer's balance expires in 14 days unless they are active before (sent once for each date it would expire).",
  },
  'activity.created': {
    scope: 'activity:write',
    description: 'An activity was recorded (not its idempotent replays), with its credits.',
  },
  'points_transaction.created': {
    scope: 'points_transaction:read',
    description: 'A ledger entry was written (credit, deduction, purchase, adjustment), with the customer after it.',
  },
  'customer.vip_tier_changed': {
    scope: 'customer:read',
    description: "A customer's VIP tier changed, for any reason.",
  },
  'points_purchase.created': {
    scope: 'points_purchase:write',
    description: 'Points were spent on a points product, with the fulfillment issued.',
  },
  'reward_fulfillment.created': {
    scope: 'reward_fulfillment:read',
    description: 'A reward fulfillment (a code) was issued.',
  },
  'reward_fulfillment.updated': {
    scope: 'reward_fulfillment:read',
    description: "A fulfillment's status or usage changed.",
  },
  'referral.created': {
    scope: 'referral:read',
    description: "A friend was referred with a member's code (the friend's reward issued with it).",
  },
  'referral.completed': {
    scope: 'referral:read',
    description:
      "A referred friend completed a qualifying order: the referral completed (the sender's reward issued with it).",
  },
  ping: { scope: 'webhook_endpoint:read', description: 'A test event, sent on request to one endpoint.' },
} as const satisfies Record<string, { scope: Scope; description: string }>;

export type EventType = keyof typeof EVENT_TYPES;

export const EVENT_TYPE_NAMES = Object.keys(EVENT_TYPES) as EventType[];

export function isEventType(name: string): name is EventType {
  return Object.hasOwn(EVENT_TYPES, name);
}

/**
 * True when a credential holding `scopes` may read events of `type`: the type's scope (above) is
 * granted. The feed, and what a webhook endpoint is sent, both ask it.
 */
export function readsEventType(scopes: readonly Scope[], type: string): boolean {
  return isEventType(type) && grants(scopes, EVENT_TYPES[type].scope);
}
