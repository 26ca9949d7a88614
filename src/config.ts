import { isIP } from 'node:net';

/** Everything the service reads from its environment, validated once at start. */
export interface Config {
  readonly host: string;
  readonly port: number;
  readonly databaseUrl: string;
  readonly tls: { readonly certFile: string; readonly keyFile: string } | null;
  /** `false`, `true` (trust every hop), or the addresses/CIDRs of trusted proxies. */
  readonly trustProxy: boolean | string;
  /** Requests per second per credential; 0 switches the limit off. */
  readonly rateLimitPerSecond: number;
  readonly logLevel: LogLevel;
  /** SQLite `synchronous` pragma: FULL (default) survives power loss; NORMAL is faster. */
  readonly sqliteSynchronous: 'FULL' | 'NORMAL';
  /** Lifetime of access tokens issued by `loyalty tokens issue` and the OAuth flow. */
  readonly accessTokenTtlSeconds: number;
  /** Redis for what several processes share (rate-limit counters); null: in-process only. */
  readonly redisUrl: string | null;
  /** Server processes on this machine (node:cluster), sharing the port. */
  readonly workers: number;
  /** PostgreSQL connections per process. */
  readonly databasePoolSize: number;
  /** PostgreSQL: named (server-side prepared) statements; off behind a pooler that cannot carry them. */
  readonly databasePreparedStatements: boolean;
  /** Above this event-loop delay new requests get `503 unavailable`; 0 switches the check off. */
  readonly maxEventLoopDelayMs: number;
  /** Longest time a client may take to send a whole request (headers and body). */
  readonly requestTimeoutMs: number;
  /** Most open connections per process; further ones are closed at once. */
  readonly maxConnections: number;
  /** Failed authentications per minute from one address before its failures get `429`; 0: no limit. */
  readonly authFailuresPerMinute: number;
  /**
   * The address clients use to reach the service (`https://loyalty.example.com`), without a
   * trailing slash: the OAuth issuer and the OpenAPI `servers` entry. Null: derived from
   * HOST, PORT and TLS (`http://127.0.0.1:3000`).
   */
  readonly publicUrl: string | null;
  /**
   * Where customers' referral URLs point, without a trailing slash (`https://shop.example/r`);
   * null: PUBLIC_URL (or HOST and PORT) followed by `/r` (see referralBaseUrl).
   */
  readonly referralBaseUrl: string | null;
  /** Port of a separate listener for `/metrics` (then not served on PORT); null: on PORT. */
  readonly metricsPort: number | null;
  /** Bearer token `/metrics` requires; null: none. */
  readonly metricsToken: string | null;
  /**
   * How long a claimed background job is held before another process may take it over (a crashed
   * process's jobs wait this long); longer than any job runs (a webhook attempt: 10 s).
   */
  readonly jobLeaseSeconds: number;
  /** Events and their webhooks (EVENT_RETENTION_DAYS, WEBHOOK_RETRY_SCHEDULE, WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  readonly events: EventSettings;
}

/** How long events are kept and how webhooks are delivered. */
export interface EventSettings {
  /** Days an event (and its delivery log) is kept. */
  readonly retentionDays: number;
  /** Seconds before each retry of a failed delivery; after the last, the delivery has failed. */
  readonly webhookRetrySchedule: readonly number[];
  /** Allows `http://` and loopback, private and link-local destinations (tests, private deployments). */
  readonly webhookAllowPrivateNetworks: boolean;
}

/** The contract's retry schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE: readonly number[] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

export const DEFAULT_EVENT_SETTINGS: EventSettings = Object.freeze({
  retentionDays: 30,
  webhookRetrySchedule: DEFAULT_WEBHOOK_RETRY_SCHEDULE,
  webhookAllowPrivateNetworks: false,
});

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_DATABASE_URL = 'sqlite:./data/loyalty.db';

/** Raised with every configuration mistake at once, each on its own line. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Reads and validates the environment; throws a ConfigError naming each mistake. */
export function loadConfig(env: Env = process.env, options: { listening?: boolean } = {}): Config {
  const problems: string[] = [];
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return Number(raw);
  };

  const host = read('HOST') ?? '127.0.0.1';
  const port = integer('PORT', 3000, 0, 65535);
  const databaseUrl = read('DATABASE_URL') ?? DEFAULT_DATABASE_URL;
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    problems.push(
      `DATABASE_URL must start with "sqlite:" (for example ${DEFAULT_DATABASE_URL}) or "postgres://", got "${redactUrl(databaseUrl)}"`,
    );
  }

  const certFile = read('TLS_CERT_FILE');
  const keyFile = read('TLS_KEY_FILE');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    problems.push('TLS_CERT_FILE and TLS_KEY_FILE must be set together (HTTPS needs both)');
  }
  const tls = certFile && keyFile ? { certFile, keyFile } : null;

  const trustProxy = parseTrustProxy(read('TRUST_PROXY'), problems);
  const rateLimitPerSecond = integer('RATE_LIMIT_PER_SECOND', 10, 0, 1_000_000);

  const logLevel = (read('LOG_LEVEL') ?? 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }

  const synchronous = (read('SQLITE_SYNCHRONOUS') ?? 'FULL').toUpperCase();
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL') {
    problems.push(`SQLITE_SYNCHRONOUS must be FULL or NORMAL, got "${synchronous}"`);
  }
  const accessTokenTtlSeconds = integer('ACCESS_TOKEN_TTL_SECONDS', 3600, 60, 31_536_000);
  const redisUrl = read('REDIS_URL') ?? null;
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    problems.push(`REDIS_URL must start with redis:// or rediss://, got "${redactUrl(redisUrl)}"`);
  }
  const workers = integer('WORKERS', 1, 1, 64);
  const databasePoolSize = integer('DATABASE_POOL_SIZE', 10, 1, 1000);
  const preparedStatements = (read('DATABASE_PREPARED_STATEMENTS') ?? 'on').toLowerCase();
  if (preparedStatements !== 'on' && preparedStatements !== 'off') {
    problems.push(`DATABASE_PREPARED_STATEMENTS must be on or off, got "${preparedStatements}"`);
  }
  const maxEventLoopDelayMs = integer('MAX_EVENT_LOOP_DELAY_MS', 1000, 0, 60_000);
  const requestTimeoutMs = integer('REQUEST_TIMEOUT_MS', 10_000, 100, 600_000);
  const maxConnections = integer('MAX_CONNECTIONS', 10_000, 1, 1_000_000);
  const authFailuresPerMinute = integer('AUTH_FAILURES_PER_MINUTE', 30, 0, 1_000_000);
  const publicUrl = parsePublicUrl(read('PUBLIC_URL'), problems);
  const referralBaseUrl = parseReferralBaseUrl(read('REFERRAL_BASE_URL'), problems);
  const metricsPort = read('METRICS_PORT') === undefined ? null : integer('METRICS_PORT', 0, 0, 65535);
  if (metricsPort !== null && metricsPort !== 0 && metricsPort === port) {
    problems.push(`METRICS_PORT must differ from PORT (both are ${port}): metrics get a listener of their own`);
  }
  const metricsToken = read('METRICS_TOKEN') ?? null;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,512}$/.test(metricsToken)) {
    problems.push(
      `METRICS_TOKEN must be 16 to 512 visible ASCII characters without spaces (a random secret, such as the output of ` +
        `\`openssl rand -hex 32\`), got ${metricsToken.length} characters`,
    );
  }
  const jobLeaseSeconds = integer('JOB_LEASE_SECONDS', 30, 15, 3600);
  const retentionDays = integer('EVENT_RETENTION_DAYS', DEFAULT_EVENT_SETTINGS.retentionDays, 1, 3650);
  const webhookRetrySchedule = parseRetrySchedule(read('WEBHOOK_RETRY_SCHEDULE'), problems);
  const allowPrivate = (read('WEBHOOK_ALLOW_PRIVATE_NETWORKS') ?? 'false').toLowerCase();
  if (!['true', 'false', '1', '0'].includes(allowPrivate)) {
    problems.push(`WEBHOOK_ALLOW_PRIVATE_NETWORKS must be true or false, got "${allowPrivate}"`);
  }
  if (workers > 1 && rateLimitPerSecond > 0 && redisUrl === null) {
    problems.push(
      `WORKERS=${workers} needs REDIS_URL: the rate limit of ${rateLimitPerSecond}/s per credential must hold across processes ` +
        '(or set RATE_LIMIT_PER_SECOND=0 to switch the limit off)',
    );
  }

  // The CLI reads the same config but never listens, so only the server checks the bind address.
  if (options.listening !== false && !tls && trustProxy === false && !isLoopbackHost(host)) {
    problems.push(
      `HOST=${host} is reachable from other machines, but neither TLS (TLS_CERT_FILE and TLS_KEY_FILE) nor TRUST_PROXY is set: ` +
        'every request would be plain HTTP, which the API refuses. Set TLS files, or TRUST_PROXY behind an HTTPS proxy, or bind 127.0.0.1.',
    );
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    host,
    port,
    databaseUrl,
    tls: tls ? Object.freeze(tls) : null,
    trustProxy,
    rateLimitPerSecond,
    logLevel: logLevel as LogLevel,
    sqliteSynchronous: synchronous as 'FULL' | 'NORMAL',
    accessTokenTtlSeconds,
    redisUrl,
    workers,
    databasePoolSize,
    databasePreparedStatements: preparedStatements !== 'off',
    maxEventLoopDelayMs,
    requestTimeoutMs,
    maxConnections,
    authFailuresPerMinute,
    publicUrl,
    referralBaseUrl,
    metricsPort,
    metricsToken,
    jobLeaseSeconds,
    events: Object.freeze({
      retentionDays,
      webhookRetrySchedule,
      webhookAllowPrivateNetworks: allowPrivate === 'true' || allowPrivate === '1',
    }),
  });
}

/** WEBHOOK_RETRY_SCHEDULE: comma-separated whole seconds (`1,1,2`), at most 20 retries of at most a week each. */
function parseRetrySchedule(raw: string | undefined, problems: string[]): readonly number[] {
  if (raw === undefined) return DEFAULT_WEBHOOK_RETRY_SCHEDULE;
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.length > 20 || entries.some((entry) => !/^\d{1,6}$/.test(entry) || Number(entry) > 604_800)) {
    problems.push(
      `WEBHOOK_RETRY_SCHEDULE must be up to 20 comma-separated whole seconds of at most 604800 (for example 1,1,2), got "${raw}"`,
    );
    return DEFAULT_WEBHOOK_RETRY_SCHEDULE;
  }
  return Object.freeze(entries.map(Number));
}

/** The address clients use: PUBLIC_URL if set, else the one HOST, PORT and TLS give. */
export function publicBaseUrl(config: Pick<Config, 'publicUrl' | 'host' | 'port' | 'tls'>): string {
  if (config.publicUrl !== null) return config.publicUrl;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `${config.tls ? 'https' : 'http'}://${host}:${config.port}`;
}

/**
 * Where a client on this machine reaches a server of this config listening on `port`: PUBLIC_URL
 * if set, else HOST and the port. A listen-on-every-address HOST is not one a client can connect
 * to, so 0.0.0.0 becomes 127.0.0.1 and :: becomes localhost (either family answers on ::).
 */
export function localBaseUrl(config: Pick<Config, 'publicUrl' | 'host' | 'port' | 'tls'>, port = config.port): string {
  if (config.publicUrl !== null) return config.publicUrl;
  const host =
    config.host === '0.0.0.0'
      ? '127.0.0.1'
      : isIP(config.host) === 6 && isUnspecifiedV6(config.host)
        ? 'localhost'
        : config.host;
  return publicBaseUrl({ publicUrl: null, host, port, tls: config.tls });
}

function isUnspecifiedV6(host: string): boolean {
  try {
    return new URL(`http://[${host}]`).hostname === '[::]';
  } catch {
    return false;
  }
}

/** Where referral URLs point: REFERRAL_BASE_URL, else the address clients use (localBaseUrl) and `/r`. */
export function referralBaseUrl(
  config: Pick<Config, 'referralBaseUrl' | 'publicUrl' | 'host' | 'port' | 'tls'>,
): string {
  return config.referralBaseUrl ?? `${localBaseUrl(config)}/r`;
}

function parseReferralBaseUrl(raw: string | undefined, problems: string[]): string | null {
  if (raw === undefined) return null;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash || url.username) {
    problems.push(
      `REFERRAL_BASE_URL must be an absolute http(s) URL without credentials, query or fragment, such as https://loyalty.example.com/r, got "${raw}"`,
    );
    return null;
  }
  return url.href.replace(/\/+$/, '');
}

function parsePublicUrl(raw: string | undefined, problems: string[]): string | null {
  if (raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`PUBLIC_URL must be an absolute http(s) URL such as https://loyalty.example.com, got "${raw}"`);
    return null;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash || url.username) {
    problems.push(`PUBLIC_URL must be an http(s) URL without credentials, query or fragment, got "${raw}"`);
    return null;
  }
  // RFC 8414 2: the issuer is a URL without query or fragment; kept without a trailing slash.
  return url.href.replace(/\/+$/, '');
}

function parseTrustProxy(raw: string | undefined, problems: string[]): boolean | string {
  if (raw === undefined) return false;
  const lower = raw.toLowerCase();
  if (lower === 'false' || lower === '0') return false;
  if (lower === 'true' || lower === '1') return true;
  const entries = raw.split(',').map((s) => s.trim());
  const bad = entries.filter((entry) => {
    const [address, bits, ...rest] = entry.split('/');
    if (rest.length > 0 || address === undefined || isIP(address) === 0) return true;
    return bits !== undefined && !/^\d{1,3}$/.test(bits);
  });
  if (bad.length > 0) {
    problems.push(`TRUST_PROXY must be true, false, or a comma-separated list of proxy addresses/CIDRs, got "${raw}"`);
    return false;
  }
  return entries.join(',');
}

/** True for hosts that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** Hides the password of a connection URL so it can be printed. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):([^@]*)@/, '//$1:***@');
}
