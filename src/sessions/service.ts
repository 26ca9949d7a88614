import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { Kysely } from 'kysely';
import type { AccountsService } from '../accounts/service.js';
import { randomBase62, sha256Hex } from '../auth/secrets.js';
import type { Clock } from '../clock.js';
import { normalizeEmail } from '../email.js';
import type { Database } from '../storage/schema.js';
import type { UsersService } from '../users/service.js';
import {
  admitAttempt,
  clearAttempts,
  type DelayRule,
  deleteSession,
  deleteSessionsOfUser,
  findLiveSession,
  forgiveAttempt,
  insertSession,
  pruneSessions,
  retryAtOf,
  touchSession,
} from './repository.js';

/** The session cookie: `oas_` and 40 base62 characters; the database holds only its SHA-256. */
const SESSION_PREFIX = 'oas_';
const SESSION_FORMAT = /^oas_[0-9A-Za-z]{40}$/;
/** How long a browser session lasts at most, signed in or not (absolute expiry). */
export const SESSION_TTL_SECONDS = 8 * 3600;
/** A signed-in session not used for this long has ended (idle expiry). */
export const SESSION_IDLE_SECONDS = 30 * 60;
/** How often a session's last use is written: at most once a minute, not on every page. */
const TOUCH_INTERVAL_MS = 60 * 1000;

/**
 * The sign-in throttle slows guessing without letting anyone lock a merchant out (OWASP's
 * authentication guidance: a lockout is a denial of service anyone who knows the email can
 * cause). Attempts are counted per client address and email together: five run free, then each
 * waits 1 s, 2 s, 4 s … up to 15 minutes, for that address and email only, and a day without an
 * attempt forgets them. A stranger's wrong passwords slow the stranger; the owner, from another
 * address, signs in at once.
 */
export const PAIR_THROTTLE: DelayRule = { free: 5, forgetAfterMs: 24 * 3600 * 1000 };
/**
 * Attempts from one address whatever the email (one place guessing across many accounts):
 * looser, since an office or a carrier's NAT shares an address, and forgotten after an hour.
 */
export const ADDRESS_THROTTLE: DelayRule = { free: 50, forgetAfterMs: 3600 * 1000 };

/** The signed-in merchant of a session. */
export interface SessionUser {
  userId: number;
  accountId: number;
  email: string;
  accountName: string;
}

/**
 * A browser session of the OAuth pages or the console. `id` is the raw cookie value and is never logged. Only a
 * signed-in session has a row; an anonymous one is its cookie alone.
 */
export interface Session {
  id: string;
  user: SessionUser | null;
  expiresAt: number;
}

/** A sign-in form's outcome: signed in, or refused with the status and message to show. */
export type FormSignInResult =
  | { kind: 'signed_in'; session: Session }
  | { kind: 'refused'; status: 400 | 429; message: string; retryAfterSeconds?: number };

export type SignInResult =
  | { kind: 'signed_in'; session: Session }
  | { kind: 'invalid' }
  | { kind: 'throttled'; retryAfterSeconds: number };

/**
 * Sessions of the OAuth sign-in and consent pages and of the console, their CSRF tokens, and sign-in with a throttle on
 * repeated failures. A session exists before sign-in (so the sign-in form has a CSRF token too)
 * and is replaced by a new one at sign-in (no session fixation). Before sign-in it is only a
 * random cookie: the CSRF token is derived from it, so nothing is stored for anonymous visitors,
 * and requests for the sign-in page cannot fill the database.
 */
export class SessionsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly users: UsersService,
    private readonly accounts: AccountsService,
  ) {}

  /**
   * The session named by a cookie value, or null (absent or malformed). A well-formed cookie
   * without a live signed-in row is an anonymous session.
   */
  async find(cookie: string | undefined): Promise<Session | null> {
    if (cookie === undefined || !SESSION_FORMAT.test(cookie)) return null;
    const now = this.clock.now();
    const hash = sha256Hex(cookie);
    const row = await findLiveSession(this.db, hash, now, now - SESSION_IDLE_SECONDS * 1000);
    if (row && now - (row.last_seen_at ?? row.created_at) >= TOUCH_INTERVAL_MS) await touchSession(this.db, hash, now);
    const user = row?.user_id == null ? null : await this.loadUser(row.user_id);
    return { id: cookie, user, expiresAt: row && user ? row.expires_at : now + SESSION_TTL_SECONDS * 1000 };
  }

  /** A new session: anonymous (a cookie only), or signed in as `user` (stored). */
  async start(user: SessionUser | null = null): Promise<Session> {
    const now = this.clock.now();
    const id = SESSION_PREFIX + randomBase62(40);
    const expiresAt = now + SESSION_TTL_SECONDS * 1000;
    if (user === null) return { id, user, expiresAt };
    await insertSession(this.db, {
      session_hash: sha256Hex(id),
      user_id: user.userId,
      created_at: now,
      expires_at: expiresAt,
    });
    return { id, user, expiresAt };
  }

  /**
   * Deletes expired and idle sessions, and sign-in throttle counts once the longest of the
   * throttle's memories has passed; how many rows. The server's timed housekeeping (sign-in no
   * longer does it), so the tables never grow without bound.
   */
  async pruneExpired(): Promise<number> {
    const now = this.clock.now();
    return pruneSessions(this.db, now, now - SESSION_IDLE_SECONDS * 1000, now - PAIR_THROTTLE.forgetAfterMs);
  }

  /** Ends the session; the caller starts a new anonymous one if the browser continues. */
  async end(session: Session): Promise<void> {
    await deleteSession(this.db, sha256Hex(session.id));
  }

  /** Signs the user out of every browser (after a password reset); how many sessions ended. */
  async endAllOf(userId: number): Promise<number> {
    return deleteSessionsOfUser(this.db, userId);
  }

  /**
   * The session's CSRF token: an HMAC keyed with the session id, so it needs no storage, cannot
   * be made without the cookie, and does not reveal the cookie.
   */
  csrfToken(session: Session): string {
    return createHmac('sha256', session.id).update('oauth-csrf-v1').digest('base64url');
  }

  /** True when `token` is this session's CSRF token (constant-time comparison). */
  checkCsrf(session: Session, token: unknown): boolean {
    if (typeof token !== 'string') return false;
    const expected = Buffer.from(this.csrfToken(session));
    const given = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /**
   * Checks the email and password. Success replaces the session with a signed-in one. Failure
   * says nothing about which part was wrong. Each attempt is counted for its address, then for
   * its address and email, before the password is checked, in one statement each: an attempt
   * whose key is still waiting is refused unchecked, so attempts made at the same moment get no
   * further than the free ones. A success clears its address and email's count and takes its
   * attempt back from the address's.
   */
  async signIn(session: Session, email: string, password: string, address: string): Promise<SignInResult> {
    const now = this.clock.now();
    const network = throttledNetwork(address);
    const addressKey = `ip:${network}`;
    const pairKey = `pair:${sha256Hex(`${network} ${normalizeEmail(email)}`)}`;
    // Refused before anything is counted: hammering during a wait writes nothing and lengthens nothing.
    const pairWait = await retryAtOf(this.db, pairKey);
    if (pairWait > now) return throttled(pairWait, now);
    const byAddress = await admitAttempt(this.db, addressKey, now, ADDRESS_THROTTLE);
    if (!byAddress.admitted) return throttled(byAddress.retryAt, now);
    const byPair = await admitAttempt(this.db, pairKey, now, PAIR_THROTTLE);
    if (!byPair.admitted) {
      // Another attempt of this pair got in first: this one is not checked, so not counted.
      await forgiveAttempt(this.db, addressKey);
      return throttled(byPair.retryAt, now);
    }

    const user = await this.users.authenticate(email, password);
    if (!user) return { kind: 'invalid' };
    await clearAttempts(this.db, pairKey);
    await forgiveAttempt(this.db, addressKey);
    const account = await this.accounts.require(user.account_id);
    await this.end(session);
    const signedIn = await this.start({
      userId: user.id,
      accountId: user.account_id,
      email: user.email,
      accountName: account.name,
    });
    return { kind: 'signed_in', session: signedIn };
  }

  /**
   * A sign-in form (the OAuth page's and the console's): both fields required, then `signIn`,
   * with what to tell the person at the keyboard when it fails.
   */
  async signInFromForm(session: Session, email: string, password: string, address: string): Promise<FormSignInResult> {
    if (email === '' || password === '') {
      return { kind: 'refused', status: 400, message: 'Enter your email and your password.' };
    }
    const result = await this.signIn(session, email, password, address);
    if (result.kind === 'signed_in') return result;
    if (result.kind === 'invalid') {
      return { kind: 'refused', status: 400, message: 'The email or password is not right. Check both and try again.' };
    }
    return {
      kind: 'refused',
      status: 429,
      message: `Too many failed sign-ins from here. Try again in ${waitInWords(result.retryAfterSeconds)}.`,
      retryAfterSeconds: result.retryAfterSeconds,
    };
  }

  private async loadUser(userId: number): Promise<SessionUser | null> {
    const user = await this.users.find(userId);
    if (!user) return null;
    const account = await this.accounts.require(user.account_id);
    return { userId: user.id, accountId: user.account_id, email: user.email, accountName: account.name };
  }
}

/** A refusal until `retryAt`, in whole seconds (at least one). */
function throttled(retryAt: number, now: number): SignInResult {
  return { kind: 'throttled', retryAfterSeconds: Math.max(1, Math.ceil((retryAt - now) / 1000)) };
}

/** "5 seconds", "1 minute", "15 minutes". */
function waitInWords(seconds: number): string {
  const [count, unit] = seconds < 60 ? [seconds, 'second'] : [Math.ceil(seconds / 60), 'minute'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

/**
 * The network an address is throttled as: an IPv4 address itself (also written as IPv4-mapped
 * IPv6), an IPv6 address's /64, the least a single subscriber is given, so that walking through
 * the addresses of one's own network does not start the counts again.
 */
export function throttledNetwork(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1] as string;
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('%')[0]?.split('::') ?? [];
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const before = groups(head);
  // An embedded IPv4 address (`::1.2.3.4`) takes the place of two groups.
  const after = groups(tail).flatMap((group) => (group.includes('.') ? ['0', '0'] : [group]));
  const zeros = tail === undefined ? [] : Array(8 - before.length - after.length).fill('0');
  const full = [...before, ...zeros, ...after];
  return `${full
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
