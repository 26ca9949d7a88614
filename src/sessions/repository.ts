import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database, OAuthSessionRow } from '../storage/schema.js';

// The rows of the pages' sessions and of the sign-in throttle. Only signed-in sessions are
// stored: an anonymous visitor costs no row (see SessionsService).

export async function insertSession(
  db: Kysely<Database>,
  session: { session_hash: string; user_id: number | null; created_at: number; expires_at: number },
): Promise<OAuthSessionRow> {
  return db
    .insertInto('oauth_sessions')
    .values({ ...session, last_seen_at: session.created_at })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Records that the session was used at `now`. */
export async function touchSession(db: Kysely<Database>, sessionHash: string, now: number): Promise<void> {
  await db.updateTable('oauth_sessions').set({ last_seen_at: now }).where('session_hash', '=', sessionHash).execute();
}

/** The session with this hash, unless it has expired or has not been used since `idleSince`. */
export async function findLiveSession(
  db: Kysely<Database>,
  sessionHash: string,
  now: number,
  idleSince: number,
): Promise<OAuthSessionRow | undefined> {
  return db
    .selectFrom('oauth_sessions')
    .selectAll()
    .where('session_hash', '=', sessionHash)
    .where('expires_at', '>', now)
    .where((eb) => eb.or([eb('last_seen_at', 'is', null), eb('last_seen_at', '>', idleSince)]))
    .executeTakeFirst();
}

export async function deleteSession(db: Kysely<Database>, sessionHash: string): Promise<void> {
  await db.deleteFrom('oauth_sessions').where('session_hash', '=', sessionHash).execute();
}

/** Deletes every session signed in as the user; how many there were. */
export async function deleteSessionsOfUser(db: Kysely<Database>, userId: number): Promise<number> {
  const { numDeletedRows } = await db.deleteFrom('oauth_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(numDeletedRows);
}

/**
 * Removes expired and idle sessions, and throttle counters whose last delay ended before
 * `throttleBefore`; how many rows of both.
 */
export async function pruneSessions(
  db: Kysely<Database>,
  now: number,
  idleSince: number,
  throttleBefore: number,
): Promise<number> {
  const sessions = await db
    .deleteFrom('oauth_sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleSince)]))
    .executeTakeFirst();
  const counters = await db
    .deleteFrom('oauth_sign_in_failures')
    .where('retry_at', '<', throttleBefore)
    .executeTakeFirst();
  return Number(sessions.numDeletedRows + counters.numDeletedRows);
}

// --- Sign-in throttle -------------------------------------------------------------------------

/** How a key's sign-in attempts slow its next ones. */
export interface DelayRule {
  /** Attempts of a run checked without waiting. */
  free: number;
  /** A run is forgotten once its last wait ended this long ago with no attempt since. */
  forgetAfterMs: number;
}

/** The longest wait between two attempts of one key. */
export const MAX_DELAY_MS = 15 * 60 * 1000;
/** Doublings of 1 s that reach MAX_DELAY_MS: from there on the wait is MAX_DELAY_MS. */
const DOUBLINGS = Math.ceil(Math.log2(MAX_DELAY_MS / 1000));

/** The wait after a run's `attempts`-th attempt: none for the free ones, then 1 s, 2 s, 4 s … up to MAX_DELAY_MS. */
export function delayAfter(attempts: number, rule: DelayRule): number {
  if (attempts < rule.free) return 0;
  return Math.min(MAX_DELAY_MS, 1000 * 2 ** (attempts - rule.free));
}

/** `delayAfter` in SQL both engines run alike (integer shifts, no power function on SQLite). */
function delayAfterSql(attempts: RawBuilder<number>, rule: DelayRule): RawBuilder<number> {
  const free = sql.lit(rule.free);
  return sql<number>`case when ${attempts} < ${free} then 0 when ${attempts} - ${free} >= ${sql.lit(DOUBLINGS)} then ${sql.lit(MAX_DELAY_MS)} else 1000 << (${attempts} - ${free}) end`;
}

/** Whether an attempt may be checked now, and if not, from when. */
export type Admission = { admitted: true } | { admitted: false; retryAt: number };

/** When the next attempt of `key` may be checked (0 when nothing holds it). */
export async function retryAtOf(db: Kysely<Database>, key: string): Promise<number> {
  const row = await db
    .selectFrom('oauth_sign_in_failures')
    .select('retry_at')
    .where('key', '=', key)
    .executeTakeFirst();
  return Number(row?.retry_at ?? 0);
}

/**
 * Counts one attempt of `key` and sets when the next may be checked, in one statement, unless
 * the key is still waiting: then nothing changes and the attempt is refused. Attempts made at
 * the same moment are counted one after the other, so no more of them are admitted than the
 * rule's free attempts (no read-then-write race). A run whose last wait ended `forgetAfterMs`
 * ago starts again at 1.
 */
export async function admitAttempt(
  db: Kysely<Database>,
  key: string,
  now: number,
  rule: DelayRule,
): Promise<Admission> {
  const forgotten = sql<boolean>`oauth_sign_in_failures.retry_at <= ${now - rule.forgetAfterMs}`;
  const attempts = sql<number>`case when ${forgotten} then 1 else oauth_sign_in_failures.failures + 1 end`;
  const row = await db
    .insertInto('oauth_sign_in_failures')
    .values({ key, failures: 1, window_started_at: now, retry_at: now + delayAfter(1, rule) })
    .onConflict((oc) =>
      oc
        .column('key')
        .doUpdateSet({
          failures: attempts,
          window_started_at: sql<number>`case when ${forgotten} then ${now} else oauth_sign_in_failures.window_started_at end`,
          retry_at: sql<number>`cast(${now} as bigint) + ${delayAfterSql(attempts, rule)}`,
        })
        // Still waiting: the row is left as it is and no row comes back.
        .where('oauth_sign_in_failures.retry_at', '<=', now),
    )
    .returning('failures')
    .executeTakeFirst();
  if (row) return { admitted: true };
  return { admitted: false, retryAt: await retryAtOf(db, key) };
}

/** Takes back one counted attempt (one that succeeded, or was not checked), never below 0. */
export async function forgiveAttempt(db: Kysely<Database>, key: string): Promise<void> {
  await db
    .updateTable('oauth_sign_in_failures')
    .set({ failures: sql<number>`case when failures > 0 then failures - 1 else 0 end` })
    .where('key', '=', key)
    .execute();
}

export async function clearAttempts(db: Kysely<Database>, key: string): Promise<void> {
  await db.deleteFrom('oauth_sign_in_failures').where('key', '=', key).execute();
}
