import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import { type Config, ConfigError, loadConfig, localBaseUrl, referralBaseUrl } from '../config.js';
import { toContractError } from '../error-mapping.js';
import { DomainError, invalidParameter } from '../errors.js';
import { MAX_LIMIT } from '../pagination/schemas.js';
import { createServices, type Services } from '../services.js';
import { type Db, openDb } from '../storage/db.js';
import { migrateToLatest } from '../storage/migrator.js';
import { storedPublicUrl } from '../storage/server-settings.js';

/** What every command's action gets: the services on the migrated database, and the config. */
export interface CliContext {
  services: Services;
  db: Db;
  config: Config;
  /** The address the last server started on this database recorded (storage/server-settings.ts). */
  storedPublicUrl: string | null;
}

/** Turns a result into the text printed without --json. */
export type TextFormat<T> = (result: T) => string;

/**
 * Runs one command: opens and migrates the database named by DATABASE_URL, calls `action`, and
 * prints its result as one JSON value (with --json) or as text. Errors go to stderr, exit 1.
 */
export async function run<T>(
  command: Command,
  action: (ctx: CliContext) => Promise<T>,
  text: TextFormat<T>,
  options: { migrate?: boolean } = {},
): Promise<void> {
  const json = Boolean(command.optsWithGlobals().json);
  let db: Db | undefined;
  try {
    const config = loadConfig(process.env, { listening: false });
    db = openDb(config.databaseUrl, {
      sqliteSynchronous: config.sqliteSynchronous,
      preparedStatements: config.databasePreparedStatements,
    });
    if (options.migrate !== false) await migrateToLatest(db);
    const stored = options.migrate !== false ? await storedPublicUrl(db.kysely) : null;
    const services = createServices(db, {
      clock: systemClock,
      accessTokenTtlSeconds: config.accessTokenTtlSeconds,
      events: config.events,
      // The server's own referral URLs: PUBLIC_URL, else the address the running server recorded.
      referralBaseUrl: referralBaseUrl({ ...config, publicUrl: config.publicUrl ?? stored }),
    });
    const result = await action({ services, db, config, storedPublicUrl: stored });
    // A command that wrote its output itself (an export to stdout) answers nothing more.
    if (result !== undefined) process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${text(result)}\n`);
  } catch (error) {
    reportError(error, json);
    process.exitCode = 1;
  } finally {
    await db?.close();
  }
}

/**
 * Writes the error as the API would answer it (the same mapping: a database that cannot be
 * reached is `unavailable`, anything unexpected `internal_error`), with the underlying cause
 * added for the administrator, who is not a remote client.
 */
function reportError(error: unknown, json: boolean): void {
  if (error instanceof ConfigError) {
    process.stderr.write(
      json
        ? `${JSON.stringify({ error: { code: 'internal_error', message: error.message } })}\n`
        : `${error.message}\n`,
    );
    return;
  }
  const mapped = toContractError(error);
  const cause = mapped === error ? '' : ` (${(error as Error)?.message ?? String(error)})`;
  const message = mapped.code === 'internal_error' ? `an internal error occurred${cause}` : `${mapped.message}${cause}`;
  if (json) {
    const body = { error: { code: mapped.code, message, ...(mapped.details ? { details: mapped.details } : {}) } };
    process.stderr.write(`${JSON.stringify(body)}\n`);
    return;
  }
  process.stderr.write(`error: ${message}\n`);
  for (const detail of mapped.details?.slice(1) ?? []) process.stderr.write(`  ${detail.field} ${detail.message}\n`);
}

/** Reads and parses a JSON file given on the command line; a bad file is `invalid_parameter`. */
export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    text = path === '-' ? readFileSync(0, 'utf8') : readFileSync(path, 'utf8');
  } catch (error) {
    throw new DomainError(
      'invalid_parameter',
      `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      [{ field: 'file', message: 'cannot be read' }],
    );
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new DomainError('invalid_request', `${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** Parses a positive integer id argument or option. */
export function parseId(value: string, name = 'id'): number {
  if (!/^\d{1,15}$/.test(value) || Number(value) < 1) {
    throw new DomainError('invalid_parameter', `${name} must be a positive whole number, got "${value}"`, [
      { field: name, message: 'must be a positive whole number' },
    ]);
  }
  return Number(value);
}

/** A `--limit` option as the API's lists read it: an integer from 1 to MAX_LIMIT, else refused by name. */
export function pageLimit(value: string): number {
  if (!/^[0-9]{1,3}$/.test(value) || Number(value) < 1 || Number(value) > MAX_LIMIT) {
    throw invalidParameter('limit', `must be an integer from 1 to ${MAX_LIMIT}`);
  }
  return Number(value);
}

/** The server's address as printed for a newcomer to paste, and what it was taken from. */
export interface ServerAddress {
  /** Without a trailing slash, such as `http://127.0.0.1:3000`. */
  url: string;
  source: '--base-url' | 'PUBLIC_URL' | 'the running server' | 'HOST and PORT';
}

/**
 * Where the server answers: `--base-url` if given, else PUBLIC_URL, else the address the last
 * server started on this database recorded, else HOST and PORT as the server would read them.
 * Null with PORT=0 and no server started yet, whose port only the running server knows.
 */
export function serverAddress(
  ctx: Pick<CliContext, 'config' | 'storedPublicUrl'>,
  baseUrl?: string,
): ServerAddress | null {
  const { config } = ctx;
  if (baseUrl !== undefined) return { url: parseBaseUrl(baseUrl), source: '--base-url' };
  if (config.publicUrl !== null) return { url: config.publicUrl, source: 'PUBLIC_URL' };
  if (ctx.storedPublicUrl !== null) return { url: ctx.storedPublicUrl, source: 'the running server' };
  if (config.port === 0) return null;
  return { url: localBaseUrl(config), source: 'HOST and PORT' };
}

/**
 * A `--base-url`: an absolute http(s) URL. The demo prints its API address with `/v1`, so that
 * suffix given back is dropped rather than doubled into paths that all answer 404.
 */
function parseBaseUrl(raw: string): string {
  const refused = () =>
    new DomainError(
      'invalid_parameter',
      `base_url must be the server's http(s) address, such as http://127.0.0.1:3000, got "${raw}"`,
      [{ field: 'base_url', message: 'must be an absolute http(s) URL without credentials, query or fragment' }],
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refused();
  }
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.search ||
    url.hash ||
    url.username ||
    url.password
  ) {
    throw refused();
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** Formats an object as aligned `key: value` lines. */
export function lines(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  return Object.entries(record)
    .map(([key, value]) => `${`${key}:`.padEnd(width + 2)}${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join('\n');
}
