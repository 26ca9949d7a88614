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
 * Paths pino censors. `err.rawPacket` is the raw bytes (Authorization header included) that Node
 * attaches to a request its HTTP parser refused, which Fastify logs at trace level. Headers
 * anywhere else are censored by `censorSecretHeaders`.
 */
const REDACTED_LOG_PATHS = ['req.headers.authorization', 'req.headers.cookie', 'err.rawPacket'];

/** Header names whose values are credentials: the API's bearer token, the console's session cookie. */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key']);
/** How deep a logged object is searched: plugins log headers two or three levels down. */
const CENSOR_DEPTH = 6;
const CENSORED = '[redacted]';

/**
 * pino's `formatters.log`: every credential header censored, at whatever depth a plugin logs it
 * (@fastify/multipart logs its busboy options, the request's headers among them, at trace level),
 * which fixed redaction paths cannot know in advance. Only plain objects and arrays are searched
 * (a request or reply is left to its serializer), and copied where something is censored: the
 * object logged may be the request's own headers.
 */
function censorSecretHeaders(object: Record<string, unknown>): Record<string, unknown> {
  return censored(object, 0) as Record<string, unknown>;
}

/** The options every logger of the service is made with (the server's, the job thread's, the app's). */
export const SAFE_LOGGING = {
  redact: { paths: REDACTED_LOG_PATHS, censor: CENSORED },
  formatters: { log: censorSecretHeaders },
};

function censored(value: unknown, depth: number): unknown {
  if (depth > CENSOR_DEPTH || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    value.forEach((item, i) => {
      const next = censored(item, depth + 1);
      if (next === item) return;
      copy ??= [...value];
      copy[i] = next;
    });
    return copy ?? value;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  let copy: Record<string, unknown> | null = null;
  for (const [key, item] of Object.entries(value)) {
    const next = SECRET_HEADERS.has(key.toLowerCase()) ? CENSORED : censored(item, depth + 1);
    if (next === item) continue;
    copy ??= { ...value };
    copy[key] = next;
  }
  return copy ?? value;
}
