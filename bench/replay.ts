// The statements a write route runs, as bench/limits/capture.ts records them from a real request, and
// what a replay varies in them: shared by the better-sqlite3 ceiling, the pgbench script and the
// Node floor (bench/floor.ts).
import { SEEDED_DISTINCT_ID } from './seed.js';
import { CUSTOMER_ID_BASE, CUSTOMERS, ID_BASE, identityOf } from './write-scenarios.js';

export interface Statement {
  sql: string;
  method: string;
  params: unknown[];
  /** The ids of the rows it returned, when it returned some (an INSERT … RETURNING). */
  returned?: number[];
}

/** Stands for a recorded request's unique values. Lower case: emails are stored lower-cased too, and must vary with the rest. */
export const MARK = 'capturemark';
/** A reward code (src/reward-fulfillments/code.ts): made anew by each replay. */
export const CODE = /^[A-HJ-NP-Z2-9]{16}$/;

/** An event's public id (src/events/service.ts): unique everywhere, made anew by each replay. */
export const EVENT_ID = /^evt_[0-9A-Za-z]{20,}$/;
/** A new customer's referral code (src/referrals/code.ts), unique across accounts: made anew in each replay. */
export const REFERRAL_CODE = /^[0-9A-Za-z]{12}$/;

/**
 * What a replay varies beyond MARK: the customers it spreads over (first to last, consecutive ids;
 * replay i takes the one the load's request n = i would, the (n · 7919)-th, wrapping), which
 * recorded numbers are the request's customer, and the smallest id that counts as a row the
 * request made (returned, and replaced by the replay's own in later statements).
 */
export interface Scope {
  first: number;
  last: number;
  isCustomer: (value: number) => boolean;
  idFloor: number;
}

/** The main scenarios' scope (write-scenarios.ts: customers, and rows made from ID_BASE). */
export const BENCH_SCOPE: Scope = {
  first: CUSTOMER_ID_BASE + 1,
  last: CUSTOMER_ID_BASE + CUSTOMERS,
  isCustomer: (value) => value > CUSTOMER_ID_BASE && value <= CUSTOMER_ID_BASE + CUSTOMERS,
  idFloor: ID_BASE,
};

/** The customer replay `i` takes. */
const customerAt = (scope: Scope, i: number) => scope.first + ((i * 7919) % (scope.last - scope.first + 1));

/** The ids of rows the benchmark made (`floor` and up) among a statement's result rows. */
export const idsOf = (rows: unknown, floor = ID_BASE): number[] =>
  (Array.isArray(rows) ? rows : rows ? [rows] : [])
    .map((row) => Number((row as { id?: unknown }).id))
    .filter((id) => Number.isInteger(id) && id >= floor);

/**
 * A recorded value for replay number `i`: MARK made unique, a reward code made anew, an id a
 * recorded statement returned replaced by the one the replay's statement returned, and the
 * customer (its id, and its seeded identity's distinct_id) replaced by the replay's customer, so
 * that replays spread over the customers as the load does instead of all locking one row.
 */
export function vary(value: unknown, i: number, ids: Map<number, number>, scope: Scope = BENCH_SCOPE): unknown {
  if (Array.isArray(value)) return value.map((item) => vary(item, i, ids, scope));
  // The replay's customer, picked as the load picks them (customerId(n * 7919)).
  const customer = i * 7919;
  if (typeof value === 'number') {
    if (scope.isCustomer(value)) return customerAt(scope, i);
    return ids.get(value) ?? value;
  }
  if (typeof value !== 'string') return value;
  if (CODE.test(value)) return Math.random().toString(36).slice(2, 10).toUpperCase().padEnd(16, 'X');
  if (EVENT_ID.test(value)) return `evt_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  if (REFERRAL_CODE.test(value))
    return `${Math.random().toString(36).slice(2, 8)}${Math.random().toString(36).slice(2, 8)}`.padEnd(12, '0');
  const identity = SEEDED_DISTINCT_ID.exec(value);
  if (identity) return identityOf(identity[1] as string, customer);
  return value.includes(MARK) ? value.replaceAll(MARK, `replay-${i}`) : value;
}

/** After a replayed statement: the ids it returned stand, in later statements, for the recorded ones. */
export function remember(
  statement: Statement,
  result: unknown,
  ids: Map<number, number>,
  scope: Scope = BENCH_SCOPE,
): void {
  const fresh = idsOf(result, scope.idFloor);
  statement.returned?.forEach((id, k) => {
    if (fresh[k] !== undefined) ids.set(id, fresh[k]);
  });
}
