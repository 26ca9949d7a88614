import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_DATABASE_URL, loadConfig, referralBaseUrl } from '../src/config.js';

describe('loadConfig', () => {
  it('has the documented defaults with an empty environment', () => {
    expect(loadConfig({})).toEqual({
      host: '127.0.0.1',
      port: 3000,
      databaseUrl: DEFAULT_DATABASE_URL,
      tls: null,
      trustProxy: false,
      rateLimitPerSecond: 10,
      logLevel: 'info',
      sqliteSynchronous: 'FULL',
      accessTokenTtlSeconds: 3600,
      redisUrl: null,
      workers: 1,
      databasePoolSize: 10,
      databasePreparedStatements: true,
      maxEventLoopDelayMs: 1000,
      requestTimeoutMs: 10_000,
      maxConnections: 10_000,
      authFailuresPerMinute: 30,
      publicUrl: null,
      referralBaseUrl: null,
      metricsPort: null,
      metricsToken: null,
      jobLeaseSeconds: 30,
      events: {
        retentionDays: 30,
        webhookRetrySchedule: [5, 300, 1800, 7200, 18_000, 36_000, 36_000],
        webhookAllowPrivateNetworks: false,
      },
    });
  });

  it('reads the events and webhooks settings, and names their mistakes', () => {
    expect(
      loadConfig({
        EVENT_RETENTION_DAYS: '7',
        WEBHOOK_RETRY_SCHEDULE: '1, 1,2',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        JOB_LEASE_SECONDS: '15',
      }),
    ).toMatchObject({
      jobLeaseSeconds: 15,
      events: { retentionDays: 7, webhookRetrySchedule: [1, 1, 2], webhookAllowPrivateNetworks: true },
    });
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return '';
      } catch (error) {
        return (error as ConfigError).problems.join('\n');
      }
    };
    expect(problems({ WEBHOOK_RETRY_SCHEDULE: '1,soon' })).toMatch(
      /WEBHOOK_RETRY_SCHEDULE must be up to 20 comma-separated whole seconds/,
    );
    expect(problems({ WEBHOOK_RETRY_SCHEDULE: Array(21).fill('1').join(',') })).toMatch(/WEBHOOK_RETRY_SCHEDULE/);
    expect(problems({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe' })).toMatch(
      /WEBHOOK_ALLOW_PRIVATE_NETWORKS must be true or false/,
    );
    expect(problems({ EVENT_RETENTION_DAYS: '0' })).toMatch(
      /EVENT_RETENTION_DAYS must be a whole number from 1 to 3650/,
    );
    expect(problems({ JOB_LEASE_SECONDS: '5' })).toMatch(/JOB_LEASE_SECONDS must be a whole number from 15 to 3600/);
  });

  it('reads the metrics listener and token, and names their mistakes', () => {
    const token = 'a'.repeat(32);
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN: token })).toMatchObject({
      metricsPort: 9464,
      metricsToken: token,
    });
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return '';
      } catch (error) {
        return (error as ConfigError).problems.join('\n');
      }
    };
    expect(problems({ METRICS_PORT: 'ninety' })).toMatch(
      /METRICS_PORT must be a whole number from 0 to 65535, got "ninety"/,
    );
    expect(problems({ PORT: '3000', METRICS_PORT: '3000' })).toMatch(/METRICS_PORT must differ from PORT/);
    expect(problems({ METRICS_TOKEN: 'short' })).toMatch(
      /METRICS_TOKEN must be 16 to 512 visible ASCII characters.*got 5/,
    );
    expect(problems({ METRICS_TOKEN: 'has a space in the middle of it' })).toMatch(/METRICS_TOKEN must be/);
    expect(problems({ METRICS_TOKEN: 'short' })).not.toContain('short');
  });

  it('reads every setting', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: '8443',
      DATABASE_URL: 'postgres://u:p@db/loyalty',
      TLS_CERT_FILE: '/etc/tls/cert.pem',
      TLS_KEY_FILE: '/etc/tls/key.pem',
      TRUST_PROXY: '10.0.0.0/8, 192.168.1.1',
      RATE_LIMIT_PER_SECOND: '0',
      LOG_LEVEL: 'WARN',
      SQLITE_SYNCHRONOUS: 'normal',
      ACCESS_TOKEN_TTL_SECONDS: '600',
      REDIS_URL: 'redis://127.0.0.1:6379/2',
      WORKERS: '4',
      DATABASE_POOL_SIZE: '25',
      DATABASE_PREPARED_STATEMENTS: 'OFF',
    });
    expect(config).toMatchObject({
      host: '0.0.0.0',
      port: 8443,
      tls: { certFile: '/etc/tls/cert.pem', keyFile: '/etc/tls/key.pem' },
      trustProxy: '10.0.0.0/8,192.168.1.1',
      rateLimitPerSecond: 0,
      logLevel: 'warn',
      sqliteSynchronous: 'NORMAL',
      accessTokenTtlSeconds: 600,
      redisUrl: 'redis://127.0.0.1:6379/2',
      workers: 4,
      databasePoolSize: 25,
      databasePreparedStatements: false,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names every mistake at once, readably', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'mysql://root:hunter2@db/x',
        TLS_CERT_FILE: '/c.pem',
        RATE_LIMIT_PER_SECOND: '-5',
        LOG_LEVEL: 'loud',
        TRUST_PROXY: 'yes please',
        DATABASE_PREPARED_STATEMENTS: 'sometimes',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(7);
    expect(problems.join('\n')).toMatch(/PORT must be a whole number from 0 to 65535, got "eighty"/);
    expect(problems.join('\n')).toMatch(/DATABASE_URL must start with/);
    expect(problems.join('\n')).not.toMatch(/hunter2/);
    expect(problems.join('\n')).toMatch(/TLS_CERT_FILE and TLS_KEY_FILE must be set together/);
    expect(problems.join('\n')).toMatch(/RATE_LIMIT_PER_SECOND/);
    expect(problems.join('\n')).toMatch(/LOG_LEVEL must be one of/);
    expect(problems.join('\n')).toMatch(/TRUST_PROXY/);
    expect(problems.join('\n')).toMatch(/DATABASE_PREPARED_STATEMENTS must be on or off, got "sometimes"/);
  });

  it('points referral URLs at REFERRAL_BASE_URL, else PUBLIC_URL or HOST and PORT, then /r', () => {
    expect(referralBaseUrl(loadConfig({}))).toBe('http://127.0.0.1:3000/r');
    expect(referralBaseUrl(loadConfig({ PUBLIC_URL: 'https://loyalty.example.com' }))).toBe(
      'https://loyalty.example.com/r',
    );
    expect(referralBaseUrl(loadConfig({ REFERRAL_BASE_URL: 'https://ref.example/go/' }))).toBe(
      'https://ref.example/go',
    );
    expect(() => loadConfig({ REFERRAL_BASE_URL: 'ref.example' })).toThrow(/REFERRAL_BASE_URL must be an absolute/);
    expect(() => loadConfig({ REFERRAL_BASE_URL: 'https://ref.example/?a=1' })).toThrow(/without credentials, query/);
  });

  it('needs Redis for several workers while the rate limit is on', () => {
    expect(() => loadConfig({ WORKERS: '2' })).toThrow(/WORKERS=2 needs REDIS_URL/);
    expect(() => loadConfig({ WORKERS: '2', RATE_LIMIT_PER_SECOND: '0' })).not.toThrow();
    expect(() => loadConfig({ WORKERS: '2', REDIS_URL: 'redis://127.0.0.1:6379' })).not.toThrow();
    expect(() => loadConfig({ REDIS_URL: 'http://x' })).toThrow(/REDIS_URL must start with redis:\/\//);
  });

  it('refuses to listen on a public address with neither TLS nor a trusted proxy', () => {
    expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(/neither TLS .* nor TRUST_PROXY/);
    expect(() => loadConfig({ HOST: '0.0.0.0', TRUST_PROXY: 'true' })).not.toThrow();
    expect(() => loadConfig({ HOST: '0.0.0.0', TLS_CERT_FILE: 'c', TLS_KEY_FILE: 'k' })).not.toThrow();
    expect(() => loadConfig({ HOST: '::1' })).not.toThrow();
    // The CLI never listens, so it does not care.
    expect(() => loadConfig({ HOST: '0.0.0.0' }, { listening: false })).not.toThrow();
  });
});

describe('.env.example (issue 49)', () => {
  const root = new URL('..', import.meta.url);
  const example = readFileSync(new URL('.env.example', root), 'utf8');
  /** NAME=value of each setting line, commented out or not. */
  const settings = new Map(
    [...example.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=(.*)$/gm)].map((match) => [match[1] as string, match[2] as string]),
  );

  it("lists every variable of the README's configuration table, and no other", () => {
    const readme = readFileSync(new URL('README.md', root), 'utf8');
    const table = readme.slice(readme.indexOf('| variable | default | meaning |'));
    // The first cell of each row names the variables (`TLS_CERT_FILE`, `TLS_KEY_FILE` share one).
    const documented = table
      .slice(0, table.indexOf('\n\n'))
      .split('\n')
      .slice(2)
      .flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1]));
    expect(documented.length).toBeGreaterThan(20);
    expect([...settings.keys()].sort()).toEqual(documented.sort());
  });

  it('holds the defaults: read as the environment, it is the config of no environment at all', () => {
    const given = Object.fromEntries([...settings].filter(([, value]) => value !== ''));
    expect(loadConfig(given)).toEqual(loadConfig({}));
  });
});
