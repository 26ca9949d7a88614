import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_EVENT_SETTINGS, type EventSettings } from '../../src/config.js';
import { eventJson, newEventId } from '../../src/events/service.js';
import { PARKED_AT } from '../../src/jobs/repository.js';
import { JobRunner, type JobRunnerOptions } from '../../src/jobs/runner.js';
import { JobsService } from '../../src/jobs/service.js';
import type { EventRow } from '../../src/storage/schema.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { type DelivererDeps, WebhookDeliverer } from '../../src/webhooks/delivery.js';
import { endpointGroup, WEBHOOK_DELIVERY_QUEUE } from '../../src/webhooks/delivery-queue.js';
import { registerWebhookMetrics } from '../../src/webhooks/metrics.js';
import { newWebhookSecret, WebhookSecrets } from '../../src/webhooks/secrets.js';
import { createTestDb, FakeClock, type TestDb } from '../helpers/app.js';
import { eventually } from '../helpers/wait.js';

// Webhook deliveries against real receivers (HTTP servers on 127.0.0.1 in this process) on a
// real database of each engine: every delivery verified with the `standardwebhooks` package, the
// retry schedule, the delivery log, destinations refused on the address resolved, redirects,
// timeouts, answer bodies cut at 1 KiB, a slow endpoint beside a fast one, automatic disabling.

const silent = pino({ level: 'silent' });
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
const DAY_S = 24 * 60 * 60;

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** What `Webhook(secret).verify` made of it: 'ok' or its error. */
  verified: string;
}

interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** TCP connections accepted, requests or not. */
  connections: number;
  close(): Promise<void>;
}

type Answer = (request: Received, response: http.ServerResponse) => void;

const ok: Answer = (_request, response) => response.writeHead(200).end('ok');

describe('webhook deliveries', () => {
  let test: TestDb;
  let clock: FakeClock;
  let jobs: JobsService;
  let uow: UnitOfWork;
  let secrets: WebhookSecrets;
  let accountId: number;
  const receivers: Receiver[] = [];
  const deliverers: WebhookDeliverer[] = [];
  const runners: JobRunner[] = [];

  beforeEach(async () => {
    test = await createTestDb();
    // Near the real time: receivers verify the timestamp against their own clock (5 min tolerance).
    clock = new FakeClock(Date.now());
    jobs = new JobsService(test.db, clock);
    uow = new UnitOfWork(test.db.kysely, clock);
    secrets = new WebhookSecrets(test.db.kysely, clock);
    const account = await test.db.kysely
      .insertInto('accounts')
      .values({ name: 'Webhook shop', created_at: clock.now() })
      .returning('id')
      .executeTakeFirstOrThrow();
    accountId = Number(account.id);
  });
  afterEach(async () => {
    for (const receiver of receivers.splice(0)) await receiver.close();
    for (const runner of runners.splice(0)) await runner.stop();
    for (const deliverer of deliverers.splice(0)) deliverer.close();
    await test.destroy();
  });

  /** A receiver on loopback verifying each request with `secret` (when given), answering with `answer`. */
  async function receiver(answer: Answer = ok, secret?: string): Promise<Receiver> {
    const received: Received[] = [];
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let verified = 'ok';
        if (secret !== undefined) {
          try {
            new Webhook(secret).verify(body, request.headers as Record<string, string>);
          } catch (error) {
            verified = String(error);
          }
        }
        const got = { headers: request.headers, body, verified };
        received.push(got);
        answer(got, response);
      });
    });
    const made: Receiver = {
      url: '',
      port: 0,
      received,
      connections: 0,
      close: () => {
        server.closeAllConnections();
        return new Promise((resolve) => server.close(() => resolve()));
      },
    };
    server.on('connection', () => made.connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    made.port = (server.address() as AddressInfo).port;
    made.url = `http://127.0.0.1:${made.port}/hooks`;
    receivers.push(made);
    return made;
  }

  async function endpoint(
    url: string,
    options: {
      secret?: string;
      previous?: { secret: string; expiresAt: number };
      status?: 'enabled' | 'disabled';
      /** The scopes of the credential that made it (null: the merchant's, not narrowed). */
      scopes?: string | null;
    } = {},
  ): Promise<{ id: number; secret: string }> {
    const secret = options.secret ?? newWebhookSecret();
    const row = await test.db.kysely
      .insertInto('webhook_endpoints')
      .values({
        account_id: accountId,
        grant_id: null,
        url,
        enabled_events: '["*"]',
        event_types: '*',
        status: options.status ?? 'enabled',
        secret: await secrets.seal(accountId, secret),
        previous_secret: options.previous ? await secrets.seal(accountId, options.previous.secret) : null,
        previous_secret_expires_at: options.previous?.expiresAt ?? null,
        failing_since: null,
        scopes: options.scopes ?? null,
        created_at: clock.now(),
        updated_at: clock.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id: Number(row.id), secret };
  }

  async function event(
    data: object = { customer: { id: 1, name: 'Zoë 🎉', email: 'zoe@example.com' } },
    type = 'customer.created',
  ): Promise<EventRow> {
    return test.db.kysely
      .insertInto('events')
      .values({
        public_id: newEventId(),
        account_id: accountId,
        type,
        data: JSON.stringify(data),
        created_at: clock.now(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** One delivery job per (event, endpoint), as the fan-out makes them. */
  const enqueue = (events: readonly EventRow[], endpointId: number) =>
    uow.run((w) =>
      jobs.enqueue(
        w,
        events.map((row) => ({
          queue: WEBHOOK_DELIVERY_QUEUE,
          accountId,
          groupKey: endpointGroup(endpointId),
          subjectId: Number(row.id),
          payload: { webhook_endpoint_id: endpointId },
        })),
      ),
    );

  function deliverer(settings: Partial<EventSettings> = {}, extra: Partial<DelivererDeps> = {}): WebhookDeliverer {
    const made = new WebhookDeliverer({
      db: test.db.kysely,
      uow,
      clock,
      jobs,
      secrets,
      settings: {
        ...DEFAULT_EVENT_SETTINGS,
        webhookAllowPrivateNetworks: true,
        webhookRetrySchedule: [1, 1, 1],
        ...settings,
      },
      ...extra,
    });
    deliverers.push(made);
    return made;
  }

  function runner(made: WebhookDeliverer, options: JobRunnerOptions = {}): JobRunner {
    const run = new JobRunner(test.db, uow, jobs, clock, [made.handler()], silent, { stopTimeoutMs: 2000, ...options });
    runners.push(run);
    return run;
  }

  const attempts = (endpointId: number) =>
    test.db.kysely
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('webhook_endpoint_id', '=', endpointId)
      .orderBy('id')
      .execute();
  const jobRows = () => test.db.kysely.selectFrom('jobs').selectAll().orderBy('id').execute();
  const endpointRow = (id: number) =>
    test.db.kysely.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('POSTs the exact bytes of the event, signed: a standardwebhooks receiver accepts it and rejects a changed body', async () => {
    const secret = newWebhookSecret();
    const target = await receiver(ok, secret);
    const hook = await endpoint(target.url, { secret });
    const row = await event();
    await enqueue([row], hook.id);
    const work = deliverer();

    expect(await runner(work).runDue()).toBe(1);

    expect(target.received).toHaveLength(1);
    const [got] = target.received;
    expect(got!.verified).toBe('ok');
    expect(got!.body).toBe(eventJson(row));
    expect(JSON.parse(got!.body)).toMatchObject({ id: row.public_id, type: 'customer.created', account_id: accountId });
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.headers['user-agent']).toBe(`loyalty-webhooks/${VERSION}`);
    expect(got!.headers['webhook-id']).toBe(row.public_id);
    expect(got!.headers['webhook-timestamp']).toBe(String(Math.floor(clock.now() / 1000)));
    expect(got!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);

    const headers = got!.headers as Record<string, string>;
    expect(() => new Webhook(secret).verify(got!.body.replace('Zoë', 'Zoe'), headers)).toThrow(/signature/i);
    expect(() => new Webhook(newWebhookSecret()).verify(got!.body, headers)).toThrow(/signature/i);

    const [logged, ...more] = await attempts(hook.id);
    expect(more).toEqual([]);
    expect(logged).toMatchObject({
      account_id: accountId,
      event_id: Number(row.id),
      attempt: 1,
      status_code: 200,
      error: null,
      response_body: 'ok',
      created_at: clock.now(),
    });
    expect(logged!.duration_ms).toBeGreaterThanOrEqual(0);
    expect(await jobRows()).toEqual([]);
    expect(work.stats).toEqual({ succeeded: 1, failed: 0 });
  });

  it('signs with both secrets while a rotated one is valid, each signature verifying with its own secret', async () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const target = await receiver();
    const hook = await endpoint(target.url, {
      secret: current,
      previous: { secret: previous, expiresAt: clock.now() + 1000 },
    });
    const work = runner(deliverer());

    await enqueue([await event()], hook.id);
    await work.runDue();
    const during = target.received[0]!;
    const headers = during.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(() => new Webhook(current).verify(during.body, headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(during.body, headers)).not.toThrow();
    // Each entry on its own is the signature of one secret: a receiver with the old secret
    // accepts the old entry alone, not the new one.
    const [first, second] = headers['webhook-signature']!.split(' ');
    expect(() => new Webhook(current).verify(during.body, { ...headers, 'webhook-signature': first! })).not.toThrow();
    expect(() => new Webhook(previous).verify(during.body, { ...headers, 'webhook-signature': second! })).not.toThrow();
    expect(() => new Webhook(previous).verify(during.body, { ...headers, 'webhook-signature': first! })).toThrow();

    // Past the overlap, only the current secret signs.
    clock.advance(1000);
    await enqueue([await event()], hook.id);
    await work.runDue();
    const after = target.received[1]!;
    const afterHeaders = after.headers as Record<string, string>;
    expect(afterHeaders['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(() => new Webhook(current).verify(after.body, afterHeaders)).not.toThrow();
    expect(() => new Webhook(previous).verify(after.body, afterHeaders)).toThrow(/signature/i);
  });

  it('retries a receiver answering 500 on the schedule until it answers 200: everything arrives, every attempt logged', async () => {
    const secret = newWebhookSecret();
    let failing = true;
    const target = await receiver((_request, response) => {
      if (failing) response.writeHead(500).end('busy');
      else response.writeHead(204).end();
    }, secret);
    const hook = await endpoint(target.url, { secret });
    const events = [await event(), await event(), await event()];
    await enqueue(events, hook.id);
    const work = deliverer({ webhookRetrySchedule: [2, 3, 4] });
    const run = runner(work);
    const t0 = clock.now();

    expect(await run.runDue()).toBe(3);
    expect((await endpointRow(hook.id)).failing_since).toBe(t0);
    // The next attempt waits for the schedule's first step (2 s, up to 10 % later).
    for (const job of await jobRows()) {
      expect(job.run_at).toBeGreaterThanOrEqual(t0 + 2000);
      expect(job.run_at).toBeLessThanOrEqual(t0 + 2200);
      expect(job.lease_owner).toBeNull();
    }
    clock.advance(1999);
    expect(await run.runDue()).toBe(0);
    clock.advance(201);
    expect(await run.runDue()).toBe(3);
    for (const job of await jobRows()) {
      expect(job.run_at).toBeGreaterThanOrEqual(clock.now() + 3000);
      expect(job.run_at).toBeLessThanOrEqual(clock.now() + 3300);
    }
    failing = false;
    clock.advance(3300);
    expect(await run.runDue()).toBe(3);
    expect(await jobRows()).toEqual([]);
    clock.advance(60_000);
    expect(await run.runDue()).toBe(0);

    expect(target.received).toHaveLength(9);
    expect(target.received.every((got) => got.verified === 'ok')).toBe(true);
    for (const row of events) {
      const sent = target.received.filter((got) => got.headers['webhook-id'] === row.public_id);
      expect(sent.map((got) => got.body)).toEqual([eventJson(row), eventJson(row), eventJson(row)]);
      // Each attempt carries its own timestamp.
      expect(new Set(sent.map((got) => got.headers['webhook-timestamp'])).size).toBe(3);
      const logged = (await attempts(hook.id)).filter((attempt) => attempt.event_id === Number(row.id));
      expect(
        logged.map((attempt) => [attempt.attempt, attempt.status_code, attempt.error, attempt.response_body]),
      ).toEqual([
        [1, 500, null, 'busy'],
        [2, 500, null, 'busy'],
        [3, 204, null, ''],
      ]);
      expect(logged.map((attempt) => attempt.created_at)).toEqual([t0, t0 + 2200, t0 + 5500]);
    }
    expect((await endpointRow(hook.id)).failing_since).toBeNull();
    expect(work.stats).toEqual({ succeeded: 3, failed: 6 });
  });

  it('stops after the schedule: the last attempt is logged, the job is gone', async () => {
    const target = await receiver((_request, response) => response.writeHead(503).end('down'));
    const hook = await endpoint(target.url);
    await enqueue([await event()], hook.id);
    const run = runner(deliverer({ webhookRetrySchedule: [1, 1] }));

    expect(await run.runDue()).toBe(1);
    for (let i = 0; i < 2; i++) {
      clock.advance(1100);
      expect(await run.runDue()).toBe(1);
    }
    expect(await jobRows()).toEqual([]);
    clock.advance(3_600_000);
    expect(await run.runDue()).toBe(0);
    expect(target.received).toHaveLength(3);
    expect((await attempts(hook.id)).map((attempt) => [attempt.attempt, attempt.status_code])).toEqual([
      [1, 503],
      [2, 503],
      [3, 503],
    ]);
  });

  it('refuses at delivery a name that resolves to loopback: the reason is logged, the receiver never reached', async () => {
    const target = await receiver();
    // The name passes the URL check (it is no address); what it resolves to is refused.
    const hook = await endpoint(`https://hooks.example.test:${target.port}/hooks`);
    await enqueue([await event()], hook.id);
    const resolved: string[] = [];
    const toLoopback = ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
      resolved.push(hostname);
      if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    }) as unknown as LookupFunction;
    const work = deliverer({ webhookAllowPrivateNetworks: false }, { lookup: toLoopback });

    expect(await runner(work).runDue()).toBe(1);
    expect(resolved).toContain('hooks.example.test');
    const [logged] = await attempts(hook.id);
    expect(logged).toMatchObject({ attempt: 1, status_code: null, response_body: '' });
    expect(logged!.error).toBe(
      '127.0.0.1 is a loopback address, which webhooks may not reach (resolved from hooks.example.test)',
    );
    expect(target.received).toEqual([]);
    expect(target.connections).toBe(0);
    expect(work.stats.failed).toBe(1);
    // A failed attempt like any other: retried on the schedule.
    expect(await jobRows()).toHaveLength(1);
  });

  it('refuses an address in the URL itself, checked again at every attempt', async () => {
    const target = await receiver();
    // Saved while private networks were allowed; the setting is off now.
    const hook = await endpoint(`https://127.0.0.1:${target.port}/hooks`);
    await enqueue([await event()], hook.id);
    await runner(deliverer({ webhookAllowPrivateNetworks: false })).runDue();
    expect((await attempts(hook.id))[0]!.error).toBe(
      'refused: the URL 127.0.0.1 is a loopback address, which webhooks may not reach ' +
        '(WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows it, for tests and private deployments only)',
    );
    expect(target.connections).toBe(0);
  });

  it('resolves names through the given lookup, and delivers when private networks are allowed', async () => {
    const target = await receiver();
    const hook = await endpoint(`http://receiver.example.test:${target.port}/hooks`);
    await enqueue([await event()], hook.id);
    const toLoopback = ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
      if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    }) as unknown as LookupFunction;
    await runner(deliverer({}, { lookup: toLoopback })).runDue();
    expect(target.received).toHaveLength(1);
    expect(target.received[0]!.headers.host).toBe(`receiver.example.test:${target.port}`);
    expect((await attempts(hook.id))[0]!.status_code).toBe(200);
  });

  it('does not follow a redirect: a 3xx is a failed attempt, the other receiver never asked', async () => {
    const elsewhere = await receiver();
    const target = await receiver((_request, response) =>
      response.writeHead(302, { location: elsewhere.url }).end('moved'),
    );
    const hook = await endpoint(target.url);
    await enqueue([await event()], hook.id);
    const work = deliverer();
    await runner(work).runDue();

    expect(target.received).toHaveLength(1);
    expect(elsewhere.received).toEqual([]);
    expect(elsewhere.connections).toBe(0);
    expect(await attempts(hook.id)).toMatchObject([
      { attempt: 1, status_code: 302, error: 'redirect not followed (302)', response_body: 'moved' },
    ]);
    expect(work.stats).toEqual({ succeeded: 0, failed: 1 });
    expect(await jobRows()).toHaveLength(1);
  });

  it('logs a refused connection', async () => {
    const closed = await receiver();
    const url = closed.url;
    await closed.close();
    receivers.pop();
    const hook = await endpoint(url);
    await enqueue([await event()], hook.id);
    await runner(deliverer()).runDue();
    expect(await attempts(hook.id)).toMatchObject([{ status_code: null, error: 'connection refused' }]);
  });

  it('keeps the first 1 KiB of an answer, cut between characters, and reads no further', async () => {
    const big = await receiver((_request, response) => {
      // x, then 2-byte characters: the 1 KiB limit falls in the middle of one.
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      response.write(`x${'é'.repeat(600)}`);
      setTimeout(() => response.end('z'.repeat(100_000)), 50).unref();
    });
    const hook = await endpoint(big.url);
    await enqueue([await event()], hook.id);
    await runner(deliverer()).runDue();
    const [logged] = await attempts(hook.id);
    expect(logged!.status_code).toBe(200);
    expect(logged!.error).toBeNull();
    expect(logged!.response_body).toBe(`x${'é'.repeat(511)}`);
    expect(Buffer.byteLength(logged!.response_body)).toBe(1023);
    expect(await jobRows()).toEqual([]);

    const ascii = await receiver((_request, response) => response.writeHead(500).end('a'.repeat(5000)));
    const other = await endpoint(ascii.url);
    await enqueue([await event()], other.id);
    await runner(deliverer()).runDue();
    expect((await attempts(other.id))[0]!.response_body).toBe('a'.repeat(1024));
  });

  it('fails an attempt with "timeout" when no answer comes in time', async () => {
    const silentReceiver = await receiver(() => {
      // Never answers.
    });
    const hook = await endpoint(silentReceiver.url);
    await enqueue([await event()], hook.id);
    await runner(deliverer({}, { timeoutMs: 300 })).runDue();
    const [logged] = await attempts(hook.id);
    expect(logged).toMatchObject({ status_code: null, error: 'timeout', response_body: '' });
    expect(logged!.duration_ms).toBeGreaterThanOrEqual(290);
    expect(logged!.duration_ms).toBeLessThan(3000);
  });

  it('gives an answer 10 seconds by default, no more', async () => {
    const late = await receiver((_request, response) => {
      setTimeout(() => response.writeHead(200).end('too late'), 10_500).unref();
    });
    const hook = await endpoint(late.url);
    await enqueue([await event()], hook.id);
    await runner(deliverer()).runDue();
    const [logged] = await attempts(hook.id);
    expect(logged).toMatchObject({ status_code: null, error: 'timeout' });
    expect(logged!.duration_ms).toBeGreaterThanOrEqual(9990);
    expect(logged!.duration_ms).toBeLessThan(10_500);
  }, 20_000);

  it('delivers to a fast endpoint while a slow one (answering after 10 s) holds its deliveries', async () => {
    const slow = await receiver((_request, response) => {
      setTimeout(() => response.writeHead(200).end(), 11_000).unref();
    });
    const fast = await receiver();
    const slowHook = await endpoint(slow.url);
    const fastHook = await endpoint(fast.url);
    const run = runner(deliverer());
    await run.start();
    const events: EventRow[] = [];
    for (let i = 0; i < 15; i++) events.push(await event());
    // The slow endpoint's deliveries first, so that they are claimed first.
    await enqueue(events, slowHook.id);
    await enqueue(events, fastHook.id);

    const started = Date.now();
    // Every delivery to the fast endpoint made and logged, within seconds, while the slow one's wait.
    const delivered = async () => (await attempts(fastHook.id)).filter((attempt) => attempt.status_code === 200).length;
    expect(await eventually(async () => (await delivered()) === 15, 5000, 20)).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(fast.received).toHaveLength(15);
    // The slow one: at most 10 attempts in flight, none answered yet, all still pending.
    expect(slow.received.length).toBeLessThanOrEqual(10);
    expect(slow.received.length).toBeGreaterThan(0);
    expect(await attempts(slowHook.id)).toEqual([]);
    expect((await jobRows()).filter((job) => job.group_key === endpointGroup(slowHook.id))).toHaveLength(15);
    // Let the attempts under way end (reset) before the runner stops.
    await slow.close();
    receivers.splice(receivers.indexOf(slow), 1);
    expect(await eventually(async () => (await attempts(slowHook.id)).length >= 10, 5000, 20)).toBe(true);
  }, 20_000);

  it('disables an endpoint after 5 days of failed attempts, parking its deliveries until it is enabled again', async () => {
    let failing = true;
    const target = await receiver((_request, response) => response.writeHead(failing ? 500 : 200).end());
    const hook = await endpoint(target.url);
    const group = endpointGroup(hook.id);
    await enqueue([await event(), await event()], hook.id);
    const work = deliverer({ webhookRetrySchedule: [3 * DAY_S, 3 * DAY_S, 3 * DAY_S] }, { random: () => 0 });
    const run = runner(work);
    const t0 = clock.now();

    expect(await run.runDue()).toBe(2);
    clock.advance(3 * DAY_S * 1000);
    expect(await run.runDue()).toBe(2);
    // Failing for 3 days: still enabled.
    expect(await endpointRow(hook.id)).toMatchObject({ status: 'enabled', failing_since: t0 });
    // A delivery added meanwhile waits with the others.
    await enqueue([await event()], hook.id);
    clock.advance(3 * DAY_S * 1000);
    expect(await run.runDue()).toBe(3);
    expect(await endpointRow(hook.id)).toMatchObject({
      status: 'disabled',
      failing_since: t0,
      updated_at: clock.now(),
    });
    const parked = await jobRows();
    expect(parked).toHaveLength(3);
    expect(parked.every((job) => job.group_key === group && job.run_at === PARKED_AT && job.lease_owner === null)).toBe(
      true,
    );
    expect(target.received).toHaveLength(7);

    // Parked: nothing is sent, however long it waits.
    clock.advance(30 * DAY_S * 1000);
    expect(await run.runDue()).toBe(0);
    expect(target.received).toHaveLength(7);

    // Enabled again (as the endpoint's update does): its deliveries resume, and succeed.
    failing = false;
    await uow.run(async (w) => {
      await w.trx.updateTable('webhook_endpoints').set({ status: 'enabled' }).where('id', '=', hook.id).execute();
      await jobs.resumeGroup(w, group);
    });
    expect(await run.runDue()).toBe(3);
    expect(await jobRows()).toEqual([]);
    expect(target.received).toHaveLength(10);
    expect((await endpointRow(hook.id)).failing_since).toBeNull();
  });

  it('keeps an endpoint enabled when a success comes within 5 days', async () => {
    let failing = true;
    const target = await receiver((_request, response) => response.writeHead(failing ? 500 : 200).end());
    const hook = await endpoint(target.url);
    const run = runner(deliverer({ webhookRetrySchedule: [4 * DAY_S, 4 * DAY_S] }, { random: () => 0 }));
    await enqueue([await event()], hook.id);
    await run.runDue();
    failing = false;
    clock.advance(DAY_S * 1000);
    await enqueue([await event()], hook.id);
    await run.runDue();
    expect((await endpointRow(hook.id)).failing_since).toBeNull();
    failing = true;
    clock.advance(3 * DAY_S * 1000);
    await run.runDue();
    const failingAgain = clock.now();
    // 5 days after the first failure, but a success came between: failing for 1 day only.
    clock.advance(DAY_S * 1000);
    await enqueue([await event()], hook.id);
    await run.runDue();
    expect(await endpointRow(hook.id)).toMatchObject({ status: 'enabled', failing_since: failingAgain });
  });

  it('parks a delivery to a disabled endpoint, and sends nothing for a deleted event or endpoint', async () => {
    const target = await receiver();
    const disabled = await endpoint(target.url, { status: 'disabled' });
    await enqueue([await event()], disabled.id);
    const run = runner(deliverer());
    expect(await run.runDue()).toBe(1);
    expect(await jobRows()).toMatchObject([{ run_at: PARKED_AT, lease_owner: null }]);
    expect(await attempts(disabled.id)).toEqual([]);

    const live = await endpoint(target.url);
    const gone = await event();
    await enqueue([gone], live.id);
    await test.db.kysely.deleteFrom('events').where('id', '=', gone.id).execute();
    const doomed = await endpoint(target.url);
    await enqueue([await event()], doomed.id);
    await test.db.kysely.deleteFrom('webhook_endpoints').where('id', '=', doomed.id).execute();
    expect(await run.runDue()).toBe(2);
    expect(await jobRows()).toHaveLength(1);
    expect(target.received).toEqual([]);
  });

  it('never sends an endpoint a type the credential that made it cannot read, however the delivery was queued', async () => {
    const target = await receiver();
    // Made by a credential holding customer:read only, subscribed to everything (`*`), with
    // deliveries queued for it as a fan-out before issue 49 queued them.
    const narrowed = await endpoint(target.url, { scopes: 'webhook_endpoint:write customer:read' });
    const readable = await event();
    const ledger = await event(
      { points_transaction: { id: 7 }, customer: { email: 'zoe@example.com' } },
      'points_transaction.created',
    );
    await enqueue([readable, ledger], narrowed.id);
    const run = runner(deliverer());
    expect(await run.runDue()).toBe(2);
    expect(await jobRows()).toEqual([]);
    expect(target.received.map((r) => r.headers['webhook-id'])).toEqual([readable.public_id]);
    expect((await attempts(narrowed.id)).map((a) => Number(a.event_id))).toEqual([Number(readable.id)]);
  });

  it("reports attempts by outcome, deliveries pending, the oldest one's age and endpoints disabled", async () => {
    const target = await receiver((request, response) =>
      response.writeHead(request.body.includes('"fail"') ? 500 : 200).end(),
    );
    const hook = await endpoint(target.url);
    await endpoint(target.url, { status: 'disabled' });
    await enqueue([await event({ ok: true }), await event({ fail: true })], hook.id);
    let work: WebhookDeliverer | null = null;
    const registry = new Registry();
    registerWebhookMetrics(registry, { jobs, db: test.db.kysely, attempts: async () => work?.stats ?? null });
    const value = async (name: string, labels: Record<string, string> = {}) => {
      const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
      return metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
    };

    expect(await value('loyalty_webhook_attempts_total', { outcome: 'succeeded' })).toBe(0);
    clock.advance(7000);
    expect(await value('loyalty_webhook_deliveries_pending')).toBe(2);
    expect(await value('loyalty_webhook_oldest_pending_delivery_age_seconds')).toBe(7);
    expect(await value('loyalty_webhook_endpoints_disabled')).toBe(1);

    work = deliverer();
    await runner(work).runDue();
    expect(await value('loyalty_webhook_attempts_total', { outcome: 'succeeded' })).toBe(1);
    expect(await value('loyalty_webhook_attempts_total', { outcome: 'failed' })).toBe(1);
    expect(await value('loyalty_webhook_deliveries_pending')).toBe(1);
    expect(await registry.metrics()).toContain('loyalty_webhook_deliveries_pending 1');
  });
});
