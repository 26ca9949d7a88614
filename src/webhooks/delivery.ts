import { lookup as dnsLookup } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import type { Kysely } from 'kysely';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import type { Clock } from '../clock.js';
import type { EventSettings } from '../config.js';
import { eventJson } from '../events/service.js';
import { type ClaimedJob, type JobHandler, type JobOutcome, type JobsService, PARKED_AT } from '../jobs/service.js';
import type { Database, WebhookEndpointRow } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { VERSION } from '../version.js';
import { endpointGroup, WEBHOOK_DELIVERY_QUEUE } from './delivery-queue.js';
import {
  clearFailing,
  endDelivery,
  findDeliveryTarget,
  findEndpointStatus,
  insertAttempt,
  markFailing,
} from './delivery-repository.js';
import { addressProblem, urlProblem } from './destination.js';
import { endpointScopes, reads } from './narrowing.js';
import type { WebhookSecrets } from './secrets.js';
import { webhookHeaders } from './signature.js';

/** Success is a 2xx answer within this long, connecting included. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** How much of an answer is read (and kept in the delivery log); the rest is never read. */
export const MAX_RESPONSE_BYTES = 1024;
/** An endpoint whose every attempt failed for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000;
/** Keep-alive agents kept at once (one per endpoint and scheme); the least recently used is let go. */
const MAX_AGENTS = 256;
/** Sockets per endpoint: the runner has at most 10 of its attempts in flight per process. */
const SOCKETS_PER_ENDPOINT = 10;
/** An idle kept-alive socket is closed after this long: below the 5 s most servers keep one open. */
const IDLE_SOCKET_MS = 4000;
/** The longest error kept in the delivery log. */
const MAX_ERROR_LENGTH = 300;

/** `loyalty-webhooks/<version>`: the service's version (version.ts). */
export const WEBHOOK_USER_AGENT = `loyalty-webhooks/${VERSION}`;

export interface DelivererDeps {
  db: Kysely<Database>;
  uow: UnitOfWork;
  clock: Clock;
  jobs: JobsService;
  secrets: WebhookSecrets;
  settings: EventSettings;
  /** Resolves names (node:dns `lookup` when absent); tests resolve a name to 127.0.0.1 through it. */
  lookup?: LookupFunction;
  /** How long an attempt may take; the contract's 10 s unless a test shortens it. */
  timeoutMs?: number;
  /** In [0, 1): the retry jitter's randomness. */
  random?: () => number;
}

/** What one attempt came to. */
export interface AttemptResult {
  readonly ok: boolean;
  readonly statusCode: number | null;
  readonly error: string | null;
  readonly responseBody: string;
  readonly durationMs: number;
}

/** A destination refused before a byte was sent: its reason goes to the delivery log as is. */
class DestinationRefused extends Error {}

/**
 * Delivers webhooks: the job of queue `webhook_delivery` (one per event and endpoint) POSTs the
 * event's JSON, signed (Standard Webhooks), to the endpoint, logs the attempt, and retries on the
 * settings' schedule. An endpoint failing for 5 days is disabled and its deliveries parked.
 */
export class WebhookDeliverer {
  /** Attempts made by this process, by outcome (the metrics). */
  readonly stats = { succeeded: 0, failed: 0 };
  private readonly agents = new Map<string, http.Agent>();
  /** Secrets opened for signing, by their sealed form (see opened). */
  private readonly openedSecrets = new Map<string, string>();
  private readonly timeoutMs: number;
  private readonly random: () => number;

  constructor(private readonly deps: DelivererDeps) {
    this.timeoutMs = deps.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.random = deps.random ?? Math.random;
  }

  /** The job handler of queue `webhook_delivery`, for the runner. */
  handler(): JobHandler {
    return { queue: WEBHOOK_DELIVERY_QUEUE, run: (job) => this.deliver(job) };
  }

  /** Closes the kept-alive sockets (a server shutting down, a test ending). */
  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
    this.openedSecrets.clear();
  }

  /** One attempt of one delivery. */
  async deliver(job: ClaimedJob): Promise<JobOutcome> {
    const endpointId = Number(job.payload.webhook_endpoint_id);
    if (job.subjectId === null || !Number.isSafeInteger(endpointId)) return { done: true };
    const { event, endpoint } = await findDeliveryTarget(this.deps.db, job.subjectId, endpointId);
    // Deleted since (the event past retention, the endpoint by its owner): nothing to send.
    if (!event || !endpoint) return { done: true };
    // Never a type the credential that made the endpoint could not read, however the delivery came
    // to be queued (a resend, a fan-out before the endpoint was narrowed): nothing to send either,
    // and the attempt logged last, if any, ended the delivery (the log shows no retry due).
    if (!reads(endpointScopes(endpoint), event.type)) {
      if (job.attempt === 1) return { done: true };
      return { done: true, record: (w) => endDelivery(w.trx, job.subjectId!, job.id) };
    }
    if (endpoint.status !== 'enabled') return this.park(endpoint);

    const startedAt = this.deps.clock.now();
    const body = eventJson(event);
    const headers = webhookHeaders(
      await this.signingSecrets(endpoint, startedAt),
      event.public_id,
      Math.floor(startedAt / 1000),
      body,
    );
    const result = await this.post(endpoint, body, headers);
    if (result.ok) this.stats.succeeded++;
    else this.stats.failed++;

    const schedule = this.deps.settings.webhookRetrySchedule;
    const delaySeconds = result.ok ? undefined : schedule[job.attempt - 1];
    const last = delaySeconds === undefined;
    const record = (w: Work) => this.record(w, job, endpoint, result, startedAt, last);
    if (last) return { done: true, record };
    // Up to 10 % later, so that the retries of a burst that failed together spread out.
    const delayMs = Math.round(delaySeconds * 1000 * (1 + 0.1 * this.random()));
    const retryAt = this.deps.clock.now() + delayMs;
    return { runAt: retryAt, record };
  }

  /**
   * A disabled endpoint's delivery waits, parked, until the endpoint is enabled again (whose
   * update makes the group's parked jobs due). This job was claimed while that happened, so the
   * update could not move it: looked at again here, under the endpoint row's lock.
   */
  private park(endpoint: WebhookEndpointRow): JobOutcome {
    const id = Number(endpoint.id);
    return {
      runAt: PARKED_AT,
      // Parking is no attempt: the delivery keeps every retry for when the endpoint is back.
      undoAttempt: true,
      record: async (w) => {
        if ((await findEndpointStatus(w.trx, id)) === 'enabled') await this.deps.jobs.resumeGroup(w, endpointGroup(id));
      },
    };
  }

  /** The attempt's row in the delivery log, and the endpoint's failure tracking. */
  private async record(
    w: Work,
    job: ClaimedJob,
    endpoint: WebhookEndpointRow,
    result: AttemptResult,
    at: number,
    last: boolean,
  ): Promise<void> {
    const endpointId = Number(endpoint.id);
    await insertAttempt(w.trx, {
      account_id: Number(endpoint.account_id),
      webhook_endpoint_id: endpointId,
      event_id: job.subjectId!,
      attempt: job.attempt,
      status_code: result.statusCode,
      error: result.error,
      duration_ms: result.durationMs,
      response_body: result.responseBody,
      created_at: at,
      // Where the log reads what follows: the job while it is pending (see findAttemptsPage).
      delivery_id: job.id,
      ends_delivery: last ? 1 : 0,
      trigger: job.payload.trigger === 'resend' ? 'resend' : 'event',
    });
    if (result.ok) {
      // Read before the attempt: a write only when the endpoint was failing, not one per delivery.
      if (endpoint.failing_since !== null) await clearFailing(w.trx, endpointId);
      return;
    }
    if (await markFailing(w.trx, endpointId, at, at - DISABLE_AFTER_MS)) {
      // Its deliveries wait until it is enabled again: those claimed meanwhile are parked as
      // their attempts end (here, or on their next run).
      await this.deps.jobs.parkGroup(w, endpointGroup(endpointId));
    }
  }

  /** The secrets that sign now: the current one, and the one before a rotation while it is still valid. */
  private async signingSecrets(endpoint: WebhookEndpointRow, now: number): Promise<string[]> {
    const accountId = Number(endpoint.account_id);
    const secrets = [await this.opened(accountId, endpoint.secret)];
    const expires = endpoint.previous_secret_expires_at;
    if (endpoint.previous_secret !== null && expires !== null && Number(expires) > now) {
      secrets.push(await this.opened(accountId, endpoint.previous_secret));
    }
    return secrets;
  }

  /**
   * A sealed secret, opened: kept by its sealed form (a rotation seals a new one, so what is kept
   * is never stale), so that a burst of deliveries opens it once rather than once each.
   */
  private async opened(accountId: number, sealed: string): Promise<string> {
    const key = `${accountId}:${sealed}`;
    let secret = this.openedSecrets.get(key);
    if (secret === undefined) {
      secret = await this.deps.secrets.open(accountId, sealed);
      if (this.openedSecrets.size >= MAX_AGENTS * 2) this.openedSecrets.clear();
      this.openedSecrets.set(key, secret);
    }
    return secret;
  }

  /** POSTs `body` to the endpoint: never to a refused address, never following a redirect, bounded in time and size. */
  private async post(
    endpoint: WebhookEndpointRow,
    body: string,
    signed: Record<string, string>,
  ): Promise<AttemptResult> {
    const started = performance.now();
    const allowPrivate = this.deps.settings.webhookAllowPrivateNetworks;
    // Checked again at every attempt: the rules (or the setting) may have changed since it was saved.
    const problem = urlProblem(endpoint.url, allowPrivate);
    if (problem !== null) return failure(`refused: the URL ${problem}`, started);
    const url = new URL(endpoint.url);
    const outcome = await send(url, body, {
      agent: this.agent(Number(endpoint.id), url.protocol),
      lookup: guardedLookup(this.deps.lookup ?? (dnsLookup as LookupFunction), allowPrivate),
      allowPrivate,
      timeoutMs: this.timeoutMs,
      headers: {
        'content-type': 'application/json',
        'user-agent': WEBHOOK_USER_AGENT,
        ...signed,
      },
    });
    const durationMs = Math.round(performance.now() - started);
    const { statusCode } = outcome;
    if (outcome.error !== null || statusCode === null) {
      return { ok: false, statusCode, error: outcome.error ?? 'no answer', responseBody: outcome.body, durationMs };
    }
    const ok = statusCode >= 200 && statusCode < 300;
    const error = statusCode >= 300 && statusCode < 400 ? `redirect not followed (${statusCode})` : null;
    return { ok, statusCode, error, responseBody: outcome.body, durationMs };
  }

  /**
   * The endpoint's keep-alive agent for `protocol`: its sockets are checked by
   * request-filtering-agent (the resolved addresses) and bounded per endpoint. At most MAX_AGENTS
   * are kept; one let go closes its idle sockets when they time out, its busy ones when done.
   */
  private agent(endpointId: number, protocol: string): http.Agent {
    const key = `${endpointId}:${protocol}`;
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key);
    } else {
      const options = {
        keepAlive: true,
        maxSockets: SOCKETS_PER_ENDPOINT,
        maxFreeSockets: SOCKETS_PER_ENDPOINT,
        timeout: IDLE_SOCKET_MS,
        allowPrivateIPAddress: this.deps.settings.webhookAllowPrivateNetworks,
      };
      agent = protocol === 'https:' ? new RequestFilteringHttpsAgent(options) : new RequestFilteringHttpAgent(options);
    }
    this.agents.set(key, agent);
    if (this.agents.size > MAX_AGENTS) this.agents.delete(this.agents.keys().next().value!);
    return agent;
  }
}

/** A failed attempt that sent nothing. */
function failure(error: string, started: number): AttemptResult {
  return { ok: false, statusCode: null, error, responseBody: '', durationMs: Math.round(performance.now() - started) };
}

interface SendOptions {
  agent: http.Agent;
  lookup: LookupFunction;
  allowPrivate: boolean;
  timeoutMs: number;
  headers: Record<string, string>;
}

/**
 * One POST. Resolves (never rejects) with the status (null when none came), the first
 * MAX_RESPONSE_BYTES of the answer, and an error when the exchange failed before a status.
 */
function send(
  url: URL,
  body: string,
  options: SendOptions,
): Promise<{ statusCode: number | null; error: string | null; body: string }> {
  return new Promise((resolve) => {
    let statusCode: number | null = null;
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ statusCode, error, body: responseText(Buffer.concat(chunks)) });
    };
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, {
      method: 'POST',
      agent: options.agent,
      lookup: options.lookup,
      headers: { ...options.headers, 'content-length': String(Buffer.byteLength(body)) },
    });
    // One deadline for everything (resolving, connecting, TLS, the answer): a socket timeout
    // would only bound the silences between packets.
    const timer = setTimeout(() => {
      if (statusCode !== null) {
        // The status came in time; the rest of the answer did not: what came is kept.
        finish(null);
        request.destroy();
      } else {
        request.destroy(new DestinationTimeout());
      }
    }, options.timeoutMs);
    request.on('socket', (socket: Socket) => {
      // Belt and braces: the address actually connected to, whatever resolved it (the agent's
      // check sees what the lookup answered; this sees the socket).
      const check = () => {
        const remote = socket.remoteAddress;
        const problem = remote === undefined ? null : addressProblem(remote, options.allowPrivate);
        if (problem !== null) request.destroy(new DestinationRefused(problem));
      };
      if (socket.connecting) socket.once('connect', check);
      else check();
    });
    request.on('response', (response) => {
      statusCode = response.statusCode ?? null;
      response.on('data', (chunk: Buffer) => {
        if (received < MAX_RESPONSE_BYTES) chunks.push(chunk.subarray(0, MAX_RESPONSE_BYTES - received));
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) {
          // Enough: the rest is never read, and the socket (mid-answer) is not reused.
          finish(null);
          request.destroy();
        }
      });
      response.on('end', () => finish(null));
      // Destroyed mid-answer: what came is kept (finish already ran, or runs now).
      response.on('error', () => finish(null));
      response.on('aborted', () => finish(null));
    });
    request.on('error', (error) => finish(reasonOf(error)));
    request.end(body);
  });
}

class DestinationTimeout extends Error {
  constructor() {
    super('timeout');
  }
}

/** A short reason for the delivery log, from a request's error. */
export function reasonOf(error: unknown): string {
  if (error instanceof DestinationRefused || error instanceof DestinationTimeout) return clean(error.message);
  const first = error instanceof AggregateError && error.errors.length > 0 ? error.errors[0] : error;
  const { code, message } = (first ?? {}) as { code?: string; message?: string };
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset';
    case 'ETIMEDOUT':
      return 'timeout';
    case 'ENOTFOUND':
      return 'host not found';
    case 'EAI_AGAIN':
      return 'name resolution failed (EAI_AGAIN)';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
  }
  // request-filtering-agent's refusal of an address it was given: named as the address check names it.
  const filtered = /^DNS lookup ([^(\s]+)\(.*is not allowed/.exec(message ?? '');
  if (filtered) return clean(addressProblem(filtered[1]!, false) ?? `${filtered[1]} is not allowed`);
  if (code !== undefined && (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('ERR_SSL'))) {
    return clean(`TLS error (${code})`);
  }
  return clean(message ? (code ? `${message} (${code})` : message) : String(error));
}

/** Text the database takes: no NUL (PostgreSQL refuses it in text), and short. */
function clean(text: string): string {
  const plain = text.replaceAll('\u0000', '');
  return plain.length > MAX_ERROR_LENGTH ? `${plain.slice(0, MAX_ERROR_LENGTH - 1)}…` : plain;
}

/**
 * An answer's first bytes as text: UTF-8, a character cut by the 1 KiB limit left out rather than
 * shown as U+FFFD, and NUL removed (PostgreSQL's text refuses it).
 */
export function responseText(bytes: Buffer): string {
  let end = Math.min(bytes.length, MAX_RESPONSE_BYTES);
  if (end < bytes.length || end === MAX_RESPONSE_BYTES) {
    // Step back over a multi-byte character the limit cut in two.
    let start = end;
    while (start > 0 && start > end - 4 && (bytes[start - 1]! & 0xc0) === 0x80) start--;
    if (start > 0) {
      const lead = bytes[start - 1]!;
      const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
      if (start - 1 + length > end) end = start - 1;
    }
  }
  return bytes.subarray(0, end).toString('utf8').replaceAll('\u0000', '');
}

/**
 * A lookup that refuses a name resolving to an address webhooks may not reach, with the reason
 * the delivery log shows (request-filtering-agent checks the same answer again, and the socket's
 * address is checked on connect).
 */
function guardedLookup(base: LookupFunction, allowPrivate: boolean): LookupFunction {
  type Callback = (error: NodeJS.ErrnoException | null, address: unknown, family?: number) => void;
  const guarded = (hostname: string, options: object, callback: Callback) => {
    (base as unknown as (h: string, o: object, c: Callback) => void)(hostname, options, (error, address, family) => {
      if (error) return callback(error, address, family);
      const answers = Array.isArray(address) ? (address as { address: string }[]) : [{ address: String(address) }];
      for (const answer of answers) {
        const problem = addressProblem(answer.address, allowPrivate);
        if (problem !== null)
          return callback(new DestinationRefused(`${problem} (resolved from ${hostname})`), address, family);
      }
      callback(null, address, family);
    });
  };
  return guarded as unknown as LookupFunction;
}
