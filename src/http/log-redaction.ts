import type { FastifyRequest } from 'fastify';

// A credential-shaped value: a short lower-case prefix, `_`, then a long base62 run (`api_…`,
// `oa2_…`, `cs_…`, and the OAuth codes and tokens).
const CREDENTIAL = /([a-z][a-z0-9]{1,3})_[A-Za-z0-9]{16,}/g;
// A query parameter whose name says it holds a secret.
const SECRET_PARAMETER = /([?&;][^=&;#]*(?:key|token|secret|password|passwd|code|session|auth)[^=&;#]*=)[^&;#]*/gi;

/** True when `value` holds something shaped like a key, token or secret. */
export function looksLikeCredential(value: string): boolean {
  return new RegExp(CREDENTIAL.source).test(value);
}

/**
 * The URL as it may be logged: clients paste keys and tokens into query strings (and even
 * paths) by mistake, and logs are kept far longer and read more widely than secrets should be.
 */
export function redactUrlSecrets(url: string): string {
  // Decoded first: `api%5F…` is the same key as `api_…` to whoever reads the log.
  return decodeLeniently(url).replace(CREDENTIAL, '$1_[redacted]').replace(SECRET_PARAMETER, '$1[redacted]');
}

/** Percent-decodes what decodes (repeatedly, for double encoding); malformed escapes stay as they are. */
function decodeLeniently(url: string): string {
  let current = url;
  for (let round = 0; round < 3 && current.includes('%'); round++) {
    const next = current.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
    if (next === current) break;
    current = next;
  }
  return current;
}

/** Fastify's request serializer, with the URL's secrets redacted. */
export function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrlSecrets(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/**
 * Paths pino censors. The header paths matter only to code that logs headers; `err.rawPacket`
 * is the raw bytes (Authorization header included) that Node attaches to a request its HTTP
 * parser refused, which Fastify logs at trace level.
 */
export const REDACTED_LOG_PATHS = ['req.headers.authorization', 'req.headers.cookie', 'err.rawPacket'];
