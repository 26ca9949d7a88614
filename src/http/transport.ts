import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { DomainError } from '../errors.js';

const HEALTH_PATHS = new Set(['/healthz', '/readyz']);

/** True when the peer of the TCP connection is this machine. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * The contract's HTTPS rules. With TLS every request is HTTPS. Without it, plain HTTP is
 * accepted from loopback peers, or through a trusted proxy that says the client used HTTPS.
 * A trusted proxy that says `http` is refused even on loopback (a local TLS-terminating proxy
 * must not turn plain client traffic into accepted traffic). Health checks are exempt: load
 * balancers probe them on the node's plain port and they carry no data.
 */
export function registerTransportRules(app: FastifyInstance, config: Config): void {
  // A callback hook, not an async one: it runs on every request and never waits.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (isHttps(request, config)) {
      reply.header('strict-transport-security', 'max-age=31536000; includeSubDomains');
      return done();
    }
    if (HEALTH_PATHS.has(request.url.split('?')[0] ?? '')) return done();
    const forwarded = config.trustProxy !== false && request.headers['x-forwarded-proto'] !== undefined;
    if (!forwarded && isLoopbackAddress(request.socket.remoteAddress)) return done();
    done(new DomainError('https_required', 'this API is served over HTTPS only'));
  });
}

function isHttps(request: FastifyRequest, config: Config): boolean {
  if (config.tls) return true;
  return config.trustProxy !== false && request.protocol === 'https';
}
