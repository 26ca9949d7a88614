import { createHash } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll } from 'vitest';
import { type Db, openDb } from '../../src/storage/db.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';
import { sleep } from '../helpers/wait.js';

// Helpers of the reliability suites: requests over real sockets (node:http and raw net sockets),
// the contract's error checks without vitest's inject types, table checksums, a registry of the
// server processes a file starts (so every one is killed, even when a test fails), the usual
// setup (a server process on a new, seeded database), and a TCP
// proxy that can cut a server off from its database.

export const CREATE_OR_UPDATE = '/v1/customer_identities/create_or_update';

/** A complete HTTP response. */
export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface SendOptions {
  method?: string;
  path: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  /** Defaults to a new connection per request. */
  agent?: http.Agent | false;
  /** Longest wait for the whole response; past it the request counts as unanswered. */
  timeoutMs?: number;
}

/** Why a request got no complete response: the connection was dropped, or nothing came in time. */
export class NoResponse extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'NoResponse';
  }
}

/**
 * Sends one request over a real socket and resolves with the complete response; rejects with
 * NoResponse when the connection is dropped or no complete response arrives within the timeout.
 * A response counts even when the server answered before the whole body was sent (413, 401).
 */
export function send(baseUrl: string, options: SendOptions): Promise<Reply> {
  const url = new URL(baseUrl);
  const timeoutMs = options.timeoutMs ?? 15_000;
  return new Promise<Reply>((resolve, reject) => {
    let settled = false;
    const fail = (message: string, code?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new NoResponse(`${options.method ?? 'GET'} ${options.path.slice(0, 200)}: ${message}`, code));
    };
    const request = http.request({
      host: url.hostname,
      port: url.port,
      method: options.method ?? 'GET',
      path: options.path,
      headers: options.headers,
      agent: options.agent ?? false,
    });
    const timer = setTimeout(() => {
      fail(`no complete response within ${timeoutMs} ms`, 'TIMEOUT');
      request.destroy();
    }, timeoutMs);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', (error: NodeJS.ErrnoException) => fail(`response cut: ${error.message}`, error.code));
      response.on('aborted', () => fail('response aborted', 'ABORTED'));
      response.on('end', () => {
        if (settled) return;
        if (!response.complete) return fail('response incomplete', 'INCOMPLETE');
        settled = true;
        clearTimeout(timer);
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString(),
        });
      });
    });
    // An error after the response started (the server answered early and closed) is not a drop;
    // the response's own events decide.
    request.on('error', (error: NodeJS.ErrnoException) => fail(`request failed: ${error.message}`, error.code));
    request.end(options.body);
  });
}

/** `send`, with JSON in and out. */
export async function sendJson(
  baseUrl: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  options: { agent?: http.Agent | false; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Reply & { json: any }> {
  const headers: Record<string, string> = { ...options.headers };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const reply = await send(baseUrl, {
    method,
    path,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    agent: options.agent,
    timeoutMs: options.timeoutMs,
  });
  let json: unknown;
  try {
    json = reply.body === '' ? undefined : JSON.parse(reply.body);
  } catch {
    json = undefined;
  }
  return { ...reply, json };
}

/**
 * Sends `count` JSON POSTs at once with `token`, alternating between `targets` (server processes),
 * the body of each made by `request` from its index.
 */
export function burst(
  targets: ServerProcess[],
  count: number,
  token: string,
  request: (i: number) => { path: string; body: unknown },
  options: { agent?: http.Agent; headers?: Record<string, string> } = {},
): Promise<Array<Reply & { json: any }>> {
  return Promise.all(
    Array.from({ length: count }, (_, i) => {
      const { path, body } = request(i);
      return sendJson(targets[i % targets.length]!.url, 'POST', path, token, body, { ...options, timeoutMs: 30_000 });
    }),
  );
}

/** A customer's points balance, as stored. */
export async function balanceOf(store: Db, id: number): Promise<number> {
  const row = await store.kysely
    .selectFrom('customers')
    .select('points_balance')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return Number(row.points_balance);
}

// The contract's one error check (also behind expectError), for replies from real sockets.
export { checkContractError } from '../helpers/contract.js';

/** `name{labels} value` lines of the Prometheus text format, keyed by `name{labels}`. */
export function samples(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$/.exec(line);
    if (match) map.set(match[1]!, Number(match[2]));
  }
  return map;
}

/** How many of `items` had each key. */
export function tally<T>(items: T[], key: (item: T) => string | number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) {
    const k = String(key(item));
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return counts;
}

/** The tables that hold an account's data (the OAuth tables are someone else's). */
export const DATA_TABLES = [
  'accounts',
  'api_keys',
  'access_tokens',
  'apps',
  'customers',
  'customer_identities',
  'referral_settings',
  'earning_rules',
  'activity_types',
  'activities',
  'points_transactions',
  'vip_tiers',
  'points_settings',
  'idempotency_keys',
  'rewards',
  'points_products',
  'points_purchases',
  'reward_fulfillments',
] as const;

/**
 * Columns a refused request may still move, being about the credential rather than the data: an
 * API key's last use is recorded when the key is read, whatever the request then answers.
 */
const BOOKKEEPING: Readonly<Record<string, readonly string[]>> = { api_keys: ['last_used_at'] };

function omit(row: Record<string, unknown>, columns: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([column]) => !columns.includes(column)));
}

/** A checksum of every row of `tables`, independent of row order; names the tables that differ. */
export async function checksum(db: Db, tables: readonly string[] = DATA_TABLES): Promise<string> {
  const parts: string[] = [];
  for (const table of tables) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db.kysely);
    const ignored = BOOKKEEPING[table] ?? [];
    const lines = rows.map((row) => JSON.stringify(ignored.length === 0 ? row : omit(row, ignored))).sort();
    parts.push(`${table}:${createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16)}`);
  }
  return parts.join(' ');
}

/** The tables whose part of two checksums differ. */
export function changedTables(before: string, after: string): string[] {
  const old = new Set(before.split(' '));
  return after
    .split(' ')
    .filter((part) => !old.has(part))
    .map((part) => part.split(':')[0]!);
}

/** A second handle on the database a server process uses, for reading what it stored. */
export function openStore(url: string): Db {
  return openDb(url, { poolMax: 2 });
}

/** The server processes a test file starts; `killAll` (in afterAll/afterEach) ends every one. */
export class Servers {
  private readonly started: ServerProcess[] = [];

  async start(env: Record<string, string>, options: { timeoutMs?: number } = {}): Promise<ServerProcess> {
    const server = await startServer({ LOG_LEVEL: 'info', ...env }, options);
    this.started.push(server);
    return server;
  }

  async killAll(): Promise<void> {
    // A process that already ended (by exit or signal) emits no further 'exit' to wait for.
    const running = this.started.splice(0).filter((s) => s.child.exitCode === null && s.child.signalCode === null);
    await Promise.all(running.map((server) => server.stop('SIGKILL')));
  }
}

/** What `serverOnNewDatabase` prepares; its fields are set once the describe block's beforeAll ran. */
export interface ServerOnDatabase<T> {
  database: TestDatabase;
  /** What `seed` returned. */
  seeded: T;
  server: ServerProcess;
  /** Every server process of the block: more started here are killed after it too. */
  servers: Servers;
}

/**
 * The setup of most reliability suites, registered in the calling describe block: a new, migrated
 * database of this pass's engine, prepared by `seed` (with seedTenant or withServices), and a real server
 * process on it (`RATE_LIMIT_PER_SECOND=0` and `env`). After the block, every server process it
 * started is killed and the database dropped.
 */
export function serverOnNewDatabase<T>(
  seed: (url: string) => Promise<T>,
  env: Record<string, string> = {},
): ServerOnDatabase<T> {
  const fixture = { servers: new Servers() } as ServerOnDatabase<T>;
  beforeAll(async () => {
    fixture.database = await createTestDatabase();
    fixture.seeded = await seed(fixture.database.url);
    fixture.server = await fixture.servers.start({
      DATABASE_URL: fixture.database.url,
      RATE_LIMIT_PER_SECOND: '0',
      ...env,
    });
  });
  afterAll(async () => {
    await fixture.servers.killAll();
    await fixture.database?.drop();
  });
  return fixture;
}

/** The exit code of a process that was sent a signal, or null when it did not exit within `ms`. */
export function exitWithin(server: ServerProcess, ms: number): Promise<number | null | 'timeout'> {
  return new Promise((resolve) => {
    if (server.child.exitCode !== null) return resolve(server.child.exitCode);
    const timer = setTimeout(() => resolve('timeout'), ms);
    server.child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** What a raw socket exchange got back. */
export interface RawResult {
  /** Everything the server sent. */
  data: string;
  /** The server closed or reset the connection (rather than the test giving up waiting). */
  closedByServer: boolean;
  error?: string;
  /** Milliseconds from connect to close. */
  elapsedMs: number;
}

/**
 * Writes raw bytes on a new TCP connection (optionally in timed pieces) and collects what comes
 * back until the server closes the connection or `waitMs` passes.
 */
export function rawExchange(
  port: number,
  pieces: (string | Buffer)[],
  options: { gapMs?: number; waitMs?: number; endAfterWrite?: boolean } = {},
): Promise<RawResult> {
  const waitMs = options.waitMs ?? 5000;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = Date.now();
    let data = '';
    let error: string | undefined;
    let byServer = true;
    const timer = setTimeout(() => {
      byServer = false;
      socket.destroy();
    }, waitMs);
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data, closedByServer: byServer, error, elapsedMs: Date.now() - started });
    });
    // The server half-closing its side ends the exchange too.
    socket.on('end', () => socket.end());
    socket.on('connect', async () => {
      for (const piece of pieces) {
        if (socket.destroyed || !socket.writable) return;
        socket.write(piece);
        if (options.gapMs) await sleep(options.gapMs);
      }
      if (options.endAfterWrite) socket.end();
    });
  });
}

/** The status code of the first response in raw HTTP output, or null. */
export function rawStatus(data: string): number | null {
  const match = /^HTTP\/1\.[01] (\d{3}) /.exec(data);
  return match ? Number(match[1]) : null;
}

/** Splits raw HTTP/1.1 output (Content-Length framed) into replies. */
export function parseRawReplies(data: string): Reply[] {
  const replies: Reply[] = [];
  let rest = data;
  while (rest.startsWith('HTTP/1.')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const [statusLine, ...headerLines] = rest.slice(0, end).split('\r\n');
    const headers: IncomingHttpHeaders = {};
    for (const line of headerLines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const body = rest.slice(end + 4, end + 4 + length);
    replies.push({ status: Number(statusLine?.split(' ')[1]), headers, body });
    rest = rest.slice(end + 4 + length);
  }
  return replies;
}

/**
 * A TCP proxy in front of a database, which a test can cut (existing connections reset, new
 * ones refused or left hanging) and restore.
 */
export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private mode: 'open' | 'refuse' | 'blackhole' = 'open';
  private server: net.Server | null = null;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async listen(port = 0): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  private accept(client: net.Socket): void {
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => {});
    if (this.mode === 'blackhole') return; // accepted, never answered: a host that vanished
    const upstream = net.connect(this.targetPort, this.targetHost);
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /**
   * Cuts the database off: every open connection is reset; new ones are refused (`refuse`: the
   * port is closed) or accepted and never answered (`blackhole`).
   */
  async cut(mode: 'refuse' | 'blackhole'): Promise<void> {
    this.mode = mode;
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
    if (mode === 'refuse') await this.closeListener();
  }

  /** Lets connections through again, on the same port. */
  async restore(): Promise<void> {
    const wasRefusing = this.mode === 'refuse';
    this.mode = 'open';
    for (const socket of this.sockets) socket.destroy(); // blackholed ones
    this.sockets.clear();
    if (wasRefusing) await this.listen(this.port);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await this.closeListener();
  }

  private async closeListener(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
