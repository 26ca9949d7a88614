import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { grants, type Scope } from '../auth/scopes.js';
import { sha256Hex } from '../auth/secrets.js';
import type { AuthService, Credential } from '../auth/service.js';
import { insufficientScope, unauthorized } from '../auth/service.js';
import type { Config } from '../config.js';
import { DomainError } from '../errors.js';

/** What a route declares about its callers, in `config.auth`. */
export interface RouteAuth {
  scope: Scope;
  /** Only OAuth access tokens may call (an API key gets `403 oauth_token_required`). */
  accessTokenOnly?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    /** The caller, on routes that declare `config.auth`; null elsewhere. */
    credential: Credential | null;
  }
}

// Base62 after a known prefix; anything else cannot be a credential and is refused unhashed.
const BEARER = /^Bearer +([A-Za-z0-9_]{1,200}) *$/i;

/**
 * Authenticates every request to a route that declares `config.auth`: bearer parsing, the
 * credential's scopes, then the per-credential rate limit. Runs before the body is parsed, so an
 * anonymous caller learns nothing about validation. `redis` shares the record of failed
 * credentials between processes, as it shares the counters.
 */
export function registerAuth(
  app: FastifyInstance,
  credentials: AuthService,
  config: Config,
  redis: Redis | null = null,
): void {
  app.decorateRequest('credential', null);
  const limit = rateLimiter(app, config);
  const failures = failureThrottle(app, config, redis);

  app.addHook('onRequest', async (request, reply) => {
    const auth = request.routeOptions.config.auth;
    if (!auth) return;
    const credential = await authenticate(request, credentials, failures);
    if (auth.accessTokenOnly && credential.kind !== 'access_token') {
      throw new DomainError(
        'oauth_token_required',
        'this operation accepts only an OAuth access token from an app, not an API key',
      );
    }
    if (!grants(credential.scopes, auth.scope)) throw insufficientScope(auth.scope);
    request.credential = credential;
    await limit?.(request, reply);
  });
}

const UNKNOWN_CREDENTIAL = 'the credential is unknown, revoked or expired';

/** The bearer value of the Authorization header and its hash, or the 401 it deserves as it is. */
type Presented = { token: string; hash: string } | { refusal: DomainError };

function readBearer(header: string | undefined): Presented {
  if (header === undefined || header.trim() === '') {
    return { refusal: unauthorized('an Authorization: Bearer header is required', false) };
  }
  if (!/^Bearer(\s|$)/i.test(header)) {
    return { refusal: unauthorized('the Authorization header must use the Bearer scheme', false) };
  }
  const token = BEARER.exec(header)?.[1];
  if (token === undefined) return { refusal: unauthorized(UNKNOWN_CREDENTIAL, true) };
  return { token, hash: sha256Hex(token) };
}

/**
 * The caller's credential, or the refusal. A valid credential is served whatever its address
 * did; the failure throttle only decides how a failure is answered (401, or 429 past the
 * limit) and spares the database the credentials it already knows to be bad.
 */
async function authenticate(
  request: FastifyRequest,
  credentials: AuthService,
  failures: FailureThrottle | null,
): Promise<Credential> {
  const presented = readBearer(request.headers.authorization);
  if ('token' in presented) {
    // A credential this process has just read live: no database, no throttle.
    const cached = credentials.cached(presented.hash);
    if (cached) return cached;
  }
  const retryAfter = (await failures?.blockedFor(request)) ?? null;
  if ('token' in presented && !(await failures?.knownBad(presented.hash, retryAfter !== null))) {
    const credential = await credentials.authenticate(presented.token, presented.hash);
    if (credential) return credential;
  }
  await failures?.record(request, 'token' in presented ? presented.hash : null);
  if (retryAfter !== null) {
    throw new DomainError('rate_limited', 'too many failed authentications from this address; retry later', undefined, {
      'Retry-After': String(retryAfter),
    });
  }
  throw 'refusal' in presented ? presented.refusal : unauthorized(UNKNOWN_CREDENTIAL, true);
}

/** How long a failed credential is remembered: the throttle's window. */
const FAILURE_WINDOW_MS = 60_000;
const KNOWN_BAD_ENTRIES = 10_000;

type FailureThrottle = ReturnType<typeof failureThrottle>;

/**
 * Failed authentications per address (the counters live with the rate limit's, in Redis when
 * configured), and the hashes of credentials that failed recently. Past the limit, an address
 * gets `429` for any credential that fails, and for one known to have failed (here or, through
 * Redis, in another process) without a database read. A credential that failed stays bad:
 * unknown values are never issued later, revocation and expiry are final. See docs/decisions.md.
 */
function failureThrottle(app: FastifyInstance, config: Config, redis: Redis | null) {
  if (config.authFailuresPerMinute === 0) return null;
  const counter = app.createRateLimit({
    max: config.authFailuresPerMinute,
    timeWindow: FAILURE_WINDOW_MS,
    keyGenerator: (request) => `auth-failures:${request.ip}`,
  });
  // Insertion order is age order: the oldest entry goes first when full.
  const knownBad = new Map<string, number>();
  const sharedKey = (hash: string) => `loyalty:auth-failed:${hash}`;

  return {
    /** Seconds until the address may fail again, or null when it is under the limit. */
    async blockedFor(request: FastifyRequest): Promise<number | null> {
      const state = await counter(request, { increment: false });
      if (state.isAllowed || state.remaining > 0) return null;
      return Math.max(1, state.ttlInSeconds);
    },

    /** Whether this credential failed recently: here, or with `shared`, in any process. */
    async knownBad(hash: string, shared: boolean): Promise<boolean> {
      const until = knownBad.get(hash);
      if (until !== undefined && until > performance.now()) return true;
      if (!shared || !redis) return false;
      try {
        return (await redis.exists(sharedKey(hash))) === 1;
      } catch {
        // Without Redis the database decides, as it would without the throttle.
        return false;
      }
    },

    /** Counts a failure against the address and remembers the credential that failed. */
    async record(request: FastifyRequest, hash: string | null): Promise<void> {
      await counter(request);
      if (hash === null) return;
      knownBad.delete(hash);
      if (knownBad.size >= KNOWN_BAD_ENTRIES) knownBad.delete(knownBad.keys().next().value as string);
      knownBad.set(hash, performance.now() + FAILURE_WINDOW_MS);
      await redis?.set(sharedKey(hash), '1', 'PX', FAILURE_WINDOW_MS).catch(() => undefined);
    },
  };
}

/** The per-credential limit of the contract, with @fastify/rate-limit's store and headers. */
function rateLimiter(
  app: FastifyInstance,
  config: Config,
): ((request: FastifyRequest, reply: FastifyReply) => Promise<unknown>) | null {
  if (config.rateLimitPerSecond === 0) return null;
  return app.rateLimit({
    max: config.rateLimitPerSecond,
    timeWindow: 1000,
    keyGenerator: (request) => request.credential?.rateLimitKey ?? '',
    errorResponseBuilder: (_request, context) =>
      new DomainError(
        'rate_limited',
        `rate limit of ${context.max} requests per second exceeded; retry after ${context.after}`,
      ),
  });
}
