import { type Kysely, sql } from 'kysely';
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

/** Removes expired and idle sessions (and failure counters older than `failuresBefore`). */
export async function pruneSessions(
  db: Kysely<Database>,
  now: number,
  idleSince: number,
  failuresBefore: number,
): Promise<void> {
  await db
    .deleteFrom('oauth_sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleSince)]))
    .execute();
  await db.deleteFrom('oauth_sign_in_failures').where('window_started_at', '<', failuresBefore).execute();
}

// --- Sign-in attempt counters -------------------------------------------------------------------

/** Attempts counted for a key in its current window. */
export interface AttemptCount {
  attempts: number;
  windowStartedAt: number;
}

/**
 * Counts one sign-in attempt for `key` and returns the count, in one statement (no read-then-write
 * race: attempts made at the same moment get distinct counts). A counter whose window began at or before
 * `windowStart` (it has ended) starts again at 1.
 */
export async function countAttempt(
  db: Kysely<Database>,
  key: string,
  now: number,
  windowStart: number,
): Promise<AttemptCount> {
  const row = await db
    .insertInto('oauth_sign_in_failures')
    .values({ key, failures: 1, window_started_at: now })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        failures: sql<number>`case when oauth_sign_in_failures.window_started_at <= ${windowStart} then 1 else oauth_sign_in_failures.failures + 1 end`,
        window_started_at: sql<number>`case when oauth_sign_in_failures.window_started_at <= ${windowStart} then ${now} else oauth_sign_in_failures.window_started_at end`,
      }),
    )
    .returning(['failures', 'window_started_at'])
    .executeTakeFirstOrThrow();
  return { attempts: Number(row.failures), windowStartedAt: Number(row.window_started_at) };
}

/** Takes back one counted attempt (a sign-in that succeeded), never below 0. */
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
