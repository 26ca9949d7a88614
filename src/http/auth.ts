import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { grants, type Scope } from '../auth/scopes.js';
import type { Credential, CredentialsService } from '../auth/service.js';
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
 * anonymous caller learns nothing about validation.
 */
export function registerAuth(app: FastifyInstance, credentials: CredentialsService, config: Config): void {
  app.decorateRequest('credential', null);
  const limit = rateLimiter(app, config);
  const failures = failureLimiter(app, config);

  app.addHook('onRequest', async (request, reply) => {
    const auth = request.routeOptions.config.auth;
    if (!auth) return;
    await failures?.refuseIfBlocked(request);
    let credential: Credential;
    try {
      credential = await authenticate(request, credentials);
    } catch (error) {
      await failures?.record(request);
      throw error;
    }
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

async function authenticate(request: FastifyRequest, credentials: CredentialsService): Promise<Credential> {
  const header = request.headers.authorization;
  if (header === undefined || header.trim() === '') {
    throw unauthorized('an Authorization: Bearer header is required', false);
  }
  if (!/^Bearer(\s|$)/i.test(header)) {
    throw unauthorized('the Authorization header must use the Bearer scheme', false);
  }
  const token = BEARER.exec(header)?.[1];
  const credential = token === undefined ? null : await credentials.authenticate(token);
  if (!credential) throw unauthorized('the credential is unknown, revoked or expired', true);
  return credential;
}

/**
 * Slows credential guessing: an address with too many failed authentications in a minute gets
 * `429 rate_limited` until the minute is over, before its credential is even looked up. The
 * counters live in the same store as the rate limit (Redis when configured), so they hold
 * across processes.
 */
function failureLimiter(app: FastifyInstance, config: Config) {
  if (config.authFailuresPerMinute === 0) return null;
  const counter = app.createRateLimit({
    max: config.authFailuresPerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => `auth-failures:${request.ip}`,
  });
  return {
    async refuseIfBlocked(request: FastifyRequest): Promise<void> {
      const state = await counter(request, { increment: false });
      if (state.isAllowed || state.remaining > 0) return;
      throw new DomainError(
        'rate_limited',
        'too many failed authentications from this address; retry later',
        undefined,
        { 'Retry-After': String(Math.max(1, state.ttlInSeconds)) },
      );
    },
    async record(request: FastifyRequest): Promise<void> {
      await counter(request);
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
