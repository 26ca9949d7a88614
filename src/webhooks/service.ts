import type { Kysely } from 'kysely';
import type { Scope } from '../auth/scopes.js';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import type { EventSettings } from '../config.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import type { EventsService } from '../events/service.js';
import { type JobHandler, type JobsService, PARKED_AT } from '../jobs/service.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import { WebhookDeliverer } from './delivery.js';
import { endpointGroup } from './delivery-queue.js';
import { urlProblem } from './destination.js';
import { deliveryJob } from './fan-out.js';
import { bothAllow, endpointScopes, eventTypesColumn, reads, scopesColumn } from './narrowing.js';
import {
  type AttemptRow,
  countEndpoints,
  deleteEndpoint,
  deleteGrantEndpoints,
  type EndpointChanges,
  type EndpointRow,
  type EndpointViewer,
  findAttemptsPage,
  findEndpoint,
  findEndpointsPage,
  insertEndpoint,
  lockAccountEndpoints,
  updateEndpoint,
} from './repository.js';
import {
  type DeliveryOutcome,
  type EventJson,
  MAX_ENDPOINTS_PER_ACCOUNT,
  type WebhookDeliveriesPage,
  type WebhookEndpoint,
  WebhookEndpointChange,
  WebhookEndpointInput,
  type WebhookEndpointsPage,
} from './schemas.js';
import { newWebhookSecret, WebhookSecrets } from './secrets.js';

export { endpointGroup, WEBHOOK_DELIVERY_QUEUE } from './delivery-queue.js';
export type { EventJson, WebhookDeliveriesPage, WebhookEndpoint, WebhookEndpointsPage } from './schemas.js';

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Who is asking, besides the account (docs/decisions.md, "Who an endpoint belongs to"). An app's
 * access token (`appId`, with its `grantId`: null for a token `loyalty tokens issue` made) sees
 * and changes only the endpoints made under the same authorization of its app. `scopes`: what the
 * credential can read (an app's token or an API key); an endpoint it makes or re-points is sent
 * only those event types, and it resends only those. The merchant in the console or the CLI:
 * no app, `scopes` null (nothing narrowed).
 */
export interface Caller {
  /** The app whose access token asks; absent or null for an API key, the console and the CLI. */
  appId?: number | null;
  grantId: number | null;
  scopes: readonly Scope[] | null;
}

/** Who makes or changes an endpoint: a caller of an account. */
export interface EndpointOwner extends Caller {
  accountId: number;
}

/** The console and the `loyalty` command: every endpoint of the account, nothing narrowed. */
export const MERCHANT: Caller = { appId: null, grantId: null, scopes: null };

const ENDPOINTS_CURSOR = { resource: 'webhook_endpoints', filtered: false };
const DELIVERIES_CURSOR = { resource: 'webhook_deliveries', filtered: true };

export interface WebhooksDeps {
  db: Kysely<Database>;
  uow: UnitOfWork;
  clock: Clock;
  jobs: JobsService;
  events: EventsService;
  settings: EventSettings;
}

/** Webhook endpoints: where events are sent, signed, with retries and a delivery log. */
export class WebhooksService {
  /** Seals and opens the endpoints' signing secrets (shared with the deliverer). */
  readonly secrets: WebhookSecrets;
  /** Makes the deliveries (the `webhook_delivery` queue's jobs). */
  readonly deliverer: WebhookDeliverer;
  private readonly db: Kysely<Database>;
  private readonly uow: UnitOfWork;
  private readonly jobs: JobsService;
  private readonly settings: EventSettings;
  private readonly cursors: Cursors;

  constructor(private readonly deps: WebhooksDeps) {
    this.db = deps.db;
    this.uow = deps.uow;
    this.jobs = deps.jobs;
    this.settings = deps.settings;
    this.cursors = new Cursors(deps.db, deps.clock);
    this.secrets = new WebhookSecrets(deps.db, deps.clock);
    this.deliverer = new WebhookDeliverer({
      db: deps.db,
      uow: deps.uow,
      clock: deps.clock,
      jobs: deps.jobs,
      secrets: this.secrets,
      settings: deps.settings,
    });
  }

  /**
   * Makes an endpoint from a `webhook_endpoint` object (checked here, for every front door), with
   * a new secret: the one answer that shows it. At most 20 per account.
   */
  async create(owner: EndpointOwner, input: unknown): Promise<WebhookEndpoint & { secret: string }> {
    const endpoint = validate(WebhookEndpointInput, input, 'webhook_endpoint');
    this.checkUrl(endpoint.url);
    const enabled = enabledEvents(endpoint.enabled_events);
    const eventTypes = eventTypesColumn(enabled, owner.scopes);
    const appId = owner.appId ?? null;
    const secret = newWebhookSecret();
    const sealed = await this.secrets.seal(owner.accountId, secret);
    const id = await this.uow.run(async (w) => {
      await lockAccountEndpoints(w.trx, owner.accountId);
      const { endpoints } = await countEndpoints(w.trx, owner.accountId);
      if (endpoints >= MAX_ENDPOINTS_PER_ACCOUNT) {
        throw invalidParameter(
          'webhook_endpoint',
          `cannot be added: the account has ${endpoints} webhook endpoints, the most it may have (${MAX_ENDPOINTS_PER_ACCOUNT}); delete one first`,
        );
      }
      return insertEndpoint(w.trx, {
        account_id: owner.accountId,
        // A grant is an app's: an endpoint of no app has none (whatever a caller passed).
        grant_id: appId === null ? null : owner.grantId,
        app_id: appId,
        url: endpoint.url,
        description: endpoint.description ?? '',
        enabled_events: JSON.stringify(enabled),
        event_types: eventTypes,
        scopes: scopesColumn(owner.scopes),
        status: endpoint.status ?? 'enabled',
        secret: sealed,
        previous_secret: null,
        previous_secret_expires_at: null,
        failing_since: null,
        created_at: w.now,
        updated_at: w.now,
      });
    });
    return { ...(await this.get(owner.accountId, id)), secret };
  }

  /** One page of the endpoints the caller sees (an app's: only its own), id descending. */
  async list(
    accountId: number,
    query: { limit?: number; cursor?: string },
    caller: Caller = MERCHANT,
  ): Promise<WebhookEndpointsPage> {
    const viewer = viewerOf(accountId, caller);
    const page = await keysetPage({
      codec: await this.cursors.codec(ENDPOINTS_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      fetch: async (direction, boundary, rows) =>
        (await findEndpointsPage(this.db, viewer, direction, boundary, rows)).map(toEndpoint),
    });
    return { webhook_endpoints: page.items, metadata: page.metadata };
  }

  /** The account's endpoint; `404 not_found` for one it does not have (or, for an app's token, not its own). */
  async get(accountId: number, id: number, caller: Caller = MERCHANT): Promise<WebhookEndpoint> {
    return toEndpoint(await this.require(this.db, viewerOf(accountId, caller), id));
  }

  /**
   * Changes the fields given. Disabling parks the endpoint's pending deliveries; enabling it again
   * clears its failure streak and makes them due at once. A change of `url` or `enabled_events` is
   * a re-pointing: the endpoint is then narrowed by the owner's scopes too (a credential must not
   * point an endpoint that receives more than it can read at itself).
   */
  async update(owner: EndpointOwner, id: number, input: unknown): Promise<WebhookEndpoint> {
    const change = validate(WebhookEndpointChange, input, 'webhook_endpoint');
    if (change.url !== undefined) this.checkUrl(change.url);
    const enabled = change.enabled_events === undefined ? undefined : enabledEvents(change.enabled_events);
    await this.uow.run(async (w) => {
      const row = await this.require(w.trx, viewerOf(owner.accountId, owner), id);
      const changes: EndpointChanges = {};
      if (change.url !== undefined) changes.url = change.url;
      if (change.description !== undefined) changes.description = change.description;
      if (enabled !== undefined) changes.enabled_events = JSON.stringify(enabled);
      if (change.url !== undefined || enabled !== undefined) {
        const scopes = bothAllow(endpointScopes(row), owner.scopes);
        changes.scopes = scopesColumn(scopes);
        changes.event_types = eventTypesColumn(enabled ?? (JSON.parse(row.enabled_events) as string[]), scopes);
      }
      if (change.status === 'disabled') {
        changes.status = 'disabled';
        await this.jobs.parkGroup(w, endpointGroup(id));
      } else if (change.status === 'enabled' && row.status === 'disabled') {
        changes.status = 'enabled';
        changes.failing_since = null;
        await this.jobs.resumeGroup(w, endpointGroup(id));
      }
      if (Object.keys(change).length === 0) return;
      changes.updated_at = w.now;
      if (!(await updateEndpoint(w.trx, owner.accountId, id, changes))) throw endpointNotFound(id);
    });
    return this.get(owner.accountId, id);
  }

  /** Deletes the endpoint, its delivery log and its pending deliveries. */
  async delete(accountId: number, id: number, caller: Caller = MERCHANT): Promise<void> {
    await this.uow.run(async (w) => {
      await this.require(w.trx, viewerOf(accountId, caller), id);
      if (!(await deleteEndpoint(w.trx, accountId, id))) throw endpointNotFound(id);
      await this.jobs.dropGroup(w, endpointGroup(id));
    });
  }

  /**
   * A new secret, shown in this answer only; the one it replaces keeps signing beside it (a second
   * signature) for 24 hours, so receivers can switch without losing a delivery.
   */
  async rotateSecret(
    accountId: number,
    id: number,
    caller: Caller = MERCHANT,
  ): Promise<WebhookEndpoint & { secret: string }> {
    const secret = newWebhookSecret();
    const sealed = await this.secrets.seal(accountId, secret);
    await this.uow.run(async (w) => {
      const row = await this.require(w.trx, viewerOf(accountId, caller), id);
      const rotated = await updateEndpoint(w.trx, accountId, id, {
        secret: sealed,
        previous_secret: row.secret,
        previous_secret_expires_at: w.now + PREVIOUS_SECRET_TTL_MS,
        updated_at: w.now,
      });
      if (!rotated) throw endpointNotFound(id);
    });
    return { ...(await this.get(accountId, id)), secret };
  }

  /** Records a `ping` event and sends it to this endpoint only; answers the event. */
  async sendTest(accountId: number, id: number, caller: Caller = MERCHANT): Promise<EventJson> {
    return this.uow.run(async (w) => {
      const row = await this.require(w.trx, viewerOf(accountId, caller), id);
      refuseDisabled(row, 'id');
      const event = await this.deps.events.recordAlone(w, accountId, 'ping', {});
      await this.jobs.enqueue(w, [deliveryJob(accountId, id, event.id)]);
      return { id: event.publicId, type: event.type, account_id: accountId, created_at: isoTime(w.now), data: {} };
    });
  }

  /** One page of the endpoint's delivery log (of one event, with `event_id`), newest first. */
  async deliveries(
    accountId: number,
    id: number,
    query: { limit?: number; cursor?: string; event_id?: string },
    caller: Caller = MERCHANT,
  ): Promise<WebhookDeliveriesPage> {
    await this.require(this.db, viewerOf(accountId, caller), id);
    const filters = { webhook_endpoint_id: id, ...(query.event_id === undefined ? {} : { event_id: query.event_id }) };
    // An event the account does not have (or no longer has) has no attempts: an empty page.
    const event = query.event_id === undefined ? undefined : await this.deps.events.find(accountId, query.event_id);
    const eventId = event ? Number(event.id) : query.event_id === undefined ? null : undefined;
    const page = await keysetPage({
      codec: await this.cursors.codec(DELIVERIES_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      filters,
      fetch: async (direction, boundary, rows) => {
        if (eventId === undefined) return [];
        const attempts = await findAttemptsPage(this.db, accountId, id, eventId, direction, boundary, rows);
        const now = this.deps.clock.now();
        return attempts.map((a) => {
          const { outcome, nextAttemptAt } = followUp(a, now);
          return {
            id: a.id,
            event_id: a.event_public_id,
            event_type: a.event_type,
            attempt: a.attempt,
            status_code: a.status_code,
            error: a.error,
            duration_ms: a.duration_ms,
            response_body: a.response_body,
            created_at: isoTime(a.created_at),
            trigger: a.trigger,
            outcome,
            next_attempt_at: nextAttemptAt === null ? null : isoTime(nextAttemptAt),
          };
        });
      },
    });
    return { webhook_deliveries: page.items, metadata: page.metadata };
  }

  /**
   * Sends the event to the endpoint again (whatever its type, subscribed or not), as a new
   * delivery with its own retries, its attempts numbered from 1 and logged with trigger `resend`. An event the caller cannot read, or the endpoint may not be
   * sent (its scopes), is not found, as in the feed; so is an endpoint the caller does not see.
   */
  async resend(accountId: number, eventId: string, endpointId: number, caller: Caller = MERCHANT): Promise<void> {
    const event = await this.deps.events.find(accountId, eventId);
    if (!event || !reads(caller.scopes, event.type)) throw notFound(`event ${eventId} does not exist`);
    await this.uow.run(async (w) => {
      const row = await this.require(w.trx, viewerOf(accountId, caller), endpointId);
      if (!reads(endpointScopes(row), event.type)) throw notFound(`event ${eventId} does not exist`);
      refuseDisabled(row, 'webhook_endpoint_id');
      await this.jobs.enqueue(w, [deliveryJob(accountId, endpointId, Number(event.id), 'resend')]);
    });
  }

  /** Deletes a grant's endpoints and their pending deliveries, in the grant's revocation. */
  async deleteForGrant(w: Work, grantId: number): Promise<void> {
    for (const id of await deleteGrantEndpoints(w.trx, grantId)) await this.jobs.dropGroup(w, endpointGroup(id));
  }

  /** How many endpoints the account has, and how many are disabled (the console's overview). */
  summary(accountId: number): Promise<{ endpoints: number; disabled: number }> {
    return countEndpoints(this.db, accountId);
  }

  /** The `webhook_delivery` queue's work, for every server process's JobRunner. */
  deliveryJob(): JobHandler {
    return this.deliverer.handler();
  }

  private checkUrl(url: string): void {
    const problem = urlProblem(url, this.settings.webhookAllowPrivateNetworks);
    if (problem !== null) throw invalidParameter('webhook_endpoint.url', problem);
  }

  private async require(db: Kysely<Database>, viewer: EndpointViewer, id: number): Promise<EndpointRow> {
    const row = await findEndpoint(db, viewer, id);
    if (!row) throw endpointNotFound(id);
    return row;
  }
}

/** The delivery of one event to one endpoint; a resend's says so, for its attempts in the log. */
/**
 * What followed an attempt, and when its delivery is tried next: read from the delivery's job
 * while it is pending (its run_at is the one record of that time, moved by a disable, an enable
 * or a lost claim alike), else from what the attempt recorded. An attempt is written in the
 * transaction that puts its job back, so an unclaimed job's claims are its last attempt's number;
 * a claimed job's are one more, that retry under way.
 */
export function followUp(a: AttemptRow, now: number): { outcome: DeliveryOutcome; nextAttemptAt: number | null } {
  if (a.status_code !== null && a.status_code >= 200 && a.status_code < 300) {
    return { outcome: 'succeeded', nextAttemptAt: null };
  }
  const job = a.delivery;
  if (job === null) return { outcome: a.ends_delivery ? 'failed' : 'retried', nextAttemptAt: null };
  if (!job.leased && job.attempts === a.attempt) {
    return job.runAt >= PARKED_AT
      ? { outcome: 'paused', nextAttemptAt: null }
      : { outcome: 'retry_due', nextAttemptAt: job.runAt };
  }
  if (job.leased && job.attempts === a.attempt + 1) {
    // Under way since its claim; past a lease that ran out (a crashed process), due since then.
    return { outcome: 'retry_due', nextAttemptAt: Math.min(job.runAt, now) };
  }
  return { outcome: 'retried', nextAttemptAt: null };
}

function endpointNotFound(id: number): DomainError {
  return notFound(`webhook endpoint ${id} does not exist`);
}

/** A disabled endpoint is sent nothing, a test or a resend included: `400`, saying how to enable it. */
function refuseDisabled(row: EndpointRow, field: string): void {
  if (row.status !== 'disabled') return;
  const message = `names webhook endpoint ${row.id}, which is disabled: enable it (status "enabled") first`;
  throw new DomainError('invalid_parameter', `${field} ${message}`, [{ field, message }]);
}

/** The enabled events as given, without repeats; `*` only alone. */
function enabledEvents(given: readonly string[]): string[] {
  const unique = [...new Set(given)];
  if (unique.includes('*') && unique.length > 1) {
    throw invalidParameter('webhook_endpoint.enabled_events', 'must be ["*"] alone, or a list of event types');
  }
  return unique;
}

/** Which endpoints a caller of the account sees: an app's token only its app's own, under its grant. */
function viewerOf(accountId: number, caller: Caller): EndpointViewer {
  const appId = caller.appId ?? null;
  return { accountId, appId, grantId: appId === null ? null : caller.grantId };
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    enabled_events: JSON.parse(row.enabled_events) as string[],
    status: row.status,
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
  };
}
