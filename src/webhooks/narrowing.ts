import { ALL_SCOPES, decodeScopes, encodeScopes, grants, type Scope } from '../auth/scopes.js';
import { invalidParameter } from '../errors.js';
import { EVENT_TYPES, type EventType, isEventType, readsEventType } from '../events/catalog.js';
import { SUBSCRIBABLE_EVENT_TYPES } from './schemas.js';

// What an endpoint may be sent (docs/decisions.md, "Who an endpoint belongs to"): the event types
// the scopes of the credential that made it can read, kept with the endpoint (its `scopes`
// column), so that the fan-out (`event_types`) and every delivery are narrowed by them.

/**
 * True when what holds `scopes` may read, or be sent, events of `type`: null (the merchant, an
 * endpoint not narrowed) reads every type.
 */
export function reads(scopes: readonly Scope[] | null, type: string): boolean {
  return scopes === null || readsEventType(scopes, type);
}

/** The scopes an endpoint's row is narrowed by; null: not narrowed. */
export function endpointScopes(row: { scopes: string | null }): readonly Scope[] | null {
  return row.scopes === null ? null : decodeScopes(row.scopes);
}

/** The `scopes` column for `scopes` (null: not narrowed). */
export function scopesColumn(scopes: readonly Scope[] | null): string | null {
  return scopes === null ? null : encodeScopes(scopes);
}

/** What both `a` and `b` grant (null grants everything). */
export function bothAllow(a: readonly Scope[] | null, b: readonly Scope[] | null): readonly Scope[] | null {
  if (a === null) return b;
  if (b === null) return a;
  return ALL_SCOPES.filter((scope) => grants(a, scope) && grants(b, scope));
}

/**
 * The `event_types` column: `*`, or ` type type … `. Narrowed by `scopes` (of the credential that
 * made the endpoint): only the types they can read, `*` becoming the list of them unless they read
 * every type; none is `400`.
 */
export function eventTypesColumn(enabled: readonly string[], scopes: readonly Scope[] | null): string {
  const all = enabled.includes('*');
  if (scopes === null) return all ? '*' : ` ${enabled.join(' ')} `;
  const wanted: readonly EventType[] = all ? SUBSCRIBABLE_EVENT_TYPES : enabled.filter(isEventType);
  const readable = wanted.filter((type) => readsEventType(scopes, type));
  if (readable.length === 0) {
    throw invalidParameter(
      'webhook_endpoint.enabled_events',
      `names no event type the endpoint may be sent: it receives only what the credential that made it can read (${wanted.map((t) => `${t} needs ${EVENT_TYPES[t].scope}`).join(', ')})`,
    );
  }
  return all && readable.length === SUBSCRIBABLE_EVENT_TYPES.length ? '*' : ` ${readable.join(' ')} `;
}
