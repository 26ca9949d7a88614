import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Kysely } from 'kysely';
import { Webhook } from 'standardwebhooks';
import type { Database } from '../../src/storage/schema.js';
import { eventually } from './wait.js';

// A webhook receiver as an integrator would write one: a real HTTP server on 127.0.0.1 that
// records every delivery as it arrived and checks it with the `standardwebhooks` package from
// the npm registry (never with the service's own signing code, so a wrong signature cannot pass
// by being wrong the same way on both sides). What it answers is up to the test: 200 at once by
// default, 500 for a while, or slowly.

/** An event as a delivery carries it. */
export interface DeliveredEvent {
  id: string;
  type: string;
  account_id: number;
  created_at: string;
  data: Record<string, any>;
}

/** One request the receiver got, as it arrived. */
export interface ReceivedDelivery {
  /** The `webhook-id` header. */
  webhookId: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, exactly as sent (what the signature covers). */
  body: string;
  /** The body parsed; null when it is not JSON. */
  event: DeliveredEvent | null;
  /** performance.now() when the whole body had arrived. */
  at: number;
  /** What the receiver answered. */
  status: number;
  /** The process that sent it, when `senders` named candidates (Linux: read from /proc). */
  pid: number | null;
}

/** What to answer a delivery: a status, after an optional delay. */
export interface Answer {
  status: number;
  delayMs?: number;
}

export class WebhookReceiver {
  readonly deliveries: ReceivedDelivery[] = [];
  /** The endpoint's signing secret (`whsec_…`), known once the endpoint is made. */
  secret: string | null = null;
  /** Decides each answer; 200 at once unless a test says otherwise. */
  answer: (delivery: ReceivedDelivery) => Answer = () => ({ status: 200 });
  /**
   * The pids of the processes that may deliver: when set, each connection is traced to the one
   * holding its other end, so a test can tell which process made which delivery.
   */
  senders: number[] = [];
  private readonly peers = new WeakMap<Socket, number | null>();

  private constructor(private readonly server: http.Server) {
    server.on('connection', (socket: Socket) => {
      if (this.senders.length > 0) this.peers.set(socket, peerPid(socket, this.senders));
    });
  }

  /** A receiver listening on a free port of 127.0.0.1. */
  static async start(): Promise<WebhookReceiver> {
    const server = http.createServer();
    const receiver = new WebhookReceiver(server);
    server.on('request', (request, response) => receiver.receive(request, response));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return receiver;
  }

  /** Where deliveries go: the URL an endpoint is made with. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhooks`;
  }

  /** How many times each webhook-id arrived. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const delivery of this.deliveries) counts.set(delivery.webhookId, (counts.get(delivery.webhookId) ?? 0) + 1);
    return counts;
  }

  /** The distinct events received (the first arrival of each webhook-id). */
  events(): DeliveredEvent[] {
    const seen = new Map<string, DeliveredEvent>();
    for (const delivery of this.deliveries) {
      if (delivery.event && !seen.has(delivery.webhookId)) seen.set(delivery.webhookId, delivery.event);
    }
    return [...seen.values()];
  }

  /**
   * Every delivery that `new Webhook(secret).verify(body, headers)` refuses, or whose body is not
   * the event its webhook-id names, with the reason: empty when all of them verify.
   */
  unverified(): string[] {
    if (!this.secret) throw new Error('the receiver has no secret to verify with');
    const webhook = new Webhook(this.secret);
    const wrong: string[] = [];
    for (const delivery of this.deliveries) {
      try {
        webhook.verify(delivery.body, plainHeaders(delivery.headers));
        if (delivery.event?.id !== delivery.webhookId) throw new Error(`body's id ${delivery.event?.id}`);
      } catch (error) {
        wrong.push(`${delivery.webhookId}: ${(error as Error).message}`);
      }
    }
    return wrong;
  }

  /** True when the package refuses `delivery` with its body changed (one character of it). */
  rejectsChangedBody(delivery: ReceivedDelivery): boolean {
    const changed = delivery.body.replace(
      /"account_id":(\d)/,
      (_, digit) => `"account_id":${(Number(digit) + 1) % 10}`,
    );
    if (changed === delivery.body) throw new Error('nothing to change in the body');
    try {
      new Webhook(this.secret!).verify(changed, plainHeaders(delivery.headers));
      return false;
    } catch {
      return true;
    }
  }

  /** Waits until every id of `ids` arrived; answers whether they did within `timeoutMs`. */
  waitForIds(ids: Iterable<string>, timeoutMs: number): Promise<boolean> {
    const wanted = [...ids];
    return eventually(
      async () => {
        const counts = this.counts();
        return wanted.every((id) => counts.has(id));
      },
      timeoutMs,
      50,
    );
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private receive(request: http.IncomingMessage, response: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event: DeliveredEvent | null = null;
      try {
        event = JSON.parse(body) as DeliveredEvent;
      } catch {
        event = null;
      }
      const delivery: ReceivedDelivery = {
        webhookId: String(request.headers['webhook-id'] ?? ''),
        headers: request.headers,
        body,
        event,
        at: performance.now(),
        status: 0,
        pid: this.peers.get(request.socket) ?? null,
      };
      const answer = this.answer(delivery);
      delivery.status = answer.status;
      this.deliveries.push(delivery);
      const reply = () => {
        if (response.destroyed) return;
        response.writeHead(answer.status, { 'content-type': 'text/plain' });
        response.end(answer.status < 300 ? 'ok' : 'not now');
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs).unref();
      else reply();
    });
  }
}

/**
 * Which of `pids` holds the other end of `socket` (a connection from 127.0.0.1): its inode from
 * /proc/net/tcp, then the process with that socket among its open files. Null when not found.
 */
function peerPid(socket: Socket, pids: readonly number[]): number | null {
  const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');
  const client = `:${hexPort(socket.remotePort ?? 0)}`;
  const server = `:${hexPort(socket.localPort ?? 0)}`;
  let inode: string | undefined;
  try {
    for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(client) && fields[2]?.endsWith(server)) inode = fields[9];
    }
    if (!inode) return null;
    const link = `socket:[${inode}]`;
    for (const pid of pids) {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        try {
          if (readlinkSync(`/proc/${pid}/fd/${fd}`) === link) return pid;
        } catch {
          // closed meanwhile
        }
      }
    }
  } catch {
    // no /proc (not Linux), or a process gone
  }
  return null;
}

/** `pid` and its child processes (the workers of a WORKERS=N server), from /proc. */
export function processAndChildren(pid: number): number[] {
  const pids = [pid];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid …": the name may hold spaces and parentheses, so split after it.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Node's headers as the package takes them: string values only. */
function plainHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const plain: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) plain[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return plain;
}

/**
 * Makes a webhook endpoint through the API of the server at `baseUrl` with `token` (an API key or
 * an app's access token), sending its deliveries to `receiver`, which gets the secret (shown once).
 * Answers the endpoint as created.
 */
export async function createEndpoint(
  baseUrl: string,
  token: string,
  receiver: WebhookReceiver,
  enabledEvents: string[] = ['*'],
): Promise<{ id: number; secret: string; [key: string]: unknown }> {
  const response = await fetch(`${baseUrl}/v1/webhook_endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ webhook_endpoint: { url: receiver.url, enabled_events: enabledEvents } }),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`creating a webhook endpoint answered ${response.status}: ${text}`);
  const endpoint = (JSON.parse(text) as { webhook_endpoint: { id: number; secret: string } }).webhook_endpoint;
  receiver.secret = endpoint.secret;
  return endpoint;
}

/** Deliveries not yet done (due, retrying or claimed): the `webhook_delivery` jobs left. */
export async function pendingDeliveries(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('queue', '=', 'webhook_delivery')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The public ids of the account's events written after the event `afterId` (internal id). */
export async function eventIdsAfter(
  db: Kysely<Database>,
  accountId: number,
  afterId: number,
): Promise<Map<string, { id: number; type: string }>> {
  const rows = await db
    .selectFrom('events')
    .select(['id', 'public_id', 'type'])
    .where('account_id', '=', accountId)
    .where('id', '>', afterId)
    .execute();
  return new Map(rows.map((row) => [row.public_id, { id: Number(row.id), type: row.type }]));
}

/** The internal id of the newest event (0 when none): a mark to count later events from. */
export async function lastEventId(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}
