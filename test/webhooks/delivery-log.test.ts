import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobRunner } from '../../src/jobs/runner.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import type { AttemptRow } from '../../src/webhooks/repository.js';
import type { WebhookDelivery } from '../../src/webhooks/schemas.js';
import { followUp } from '../../src/webhooks/service.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { WebhookReceiver } from '../helpers/receiver.js';

// Issue 49: the delivery log says what follows each attempt. A failed attempt whose delivery is
// retried carries `next_attempt_at` (read from the delivery's job, so a disable, an enable or a
// resend never leaves it stale); the attempt before a retry says it was retried; the last one of
// a delivery whose retries ran out says it failed; a resend's attempts say `trigger: resend`.
// Real deliveries to a receiver on 127.0.0.1, made by a job runner on the app's own services, the
// clock injected and moved by the test (WEBHOOK_RETRY_SCHEDULE 5 s, then 300 s).

const silent = pino({ level: 'silent' });
const STEPS_MS = [5000, 300_000];
/** The schedule's jitter: a retry is due up to 10 % after its step. */
const within = (at: string | null, from: number, stepMs: number) => {
  expect(at).not.toBeNull();
  const due = Date.parse(at as string);
  expect(due).toBeGreaterThanOrEqual(from + stepMs);
  expect(due).toBeLessThanOrEqual(from + stepMs * 1.1);
};

describe('the delivery log: what follows each attempt', () => {
  let t: TestApp;
  let a: Tenant;
  let receiver: WebhookReceiver;
  let runner: JobRunner;
  let status = 500;

  beforeEach(async () => {
    t = await createTestApp({ WEBHOOK_RETRY_SCHEDULE: '5,300', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    a = await createTenant(t.services, 'Shop A');
    receiver = await WebhookReceiver.start();
    status = 500;
    receiver.answer = () => ({ status });
    runner = new JobRunner(
      t.db,
      new UnitOfWork(t.db.kysely, t.clock),
      t.services.jobs,
      t.clock,
      [t.services.webhooks.deliveryJob()],
      silent,
    );
  });
  afterEach(async () => {
    await runner.stop();
    t.services.webhooks.deliverer.close();
    await receiver.close();
    await t.close();
  });

  const send = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: bearer(a.apiKey), ...(payload ? { payload } : {}) });

  async function endpoint(): Promise<number> {
    const response = await send('POST', '/v1/webhook_endpoints', {
      webhook_endpoint: { url: receiver.url, enabled_events: ['*'] },
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().webhook_endpoint.id;
  }

  async function log(id: number): Promise<WebhookDelivery[]> {
    const response = await send('GET', `/v1/webhook_endpoints/${id}/deliveries`);
    expect(response.statusCode, response.body).toBe(200);
    return response.json().webhook_deliveries;
  }

  const job = () => t.db.kysely.selectFrom('jobs').selectAll().where('queue', '=', 'webhook_delivery').execute();

  it('says when a failed attempt is retried, that it was once it was, and that the last one failed', async () => {
    const id = await endpoint();
    const ping = await t.services.webhooks.sendTest(a.accountId, id);
    const t0 = t.clock.now();
    expect(await runner.runDue()).toBe(1);

    const [first, ...none] = await log(id);
    expect(none).toEqual([]);
    expect(first).toMatchObject({
      event_id: ping.id,
      attempt: 1,
      status_code: 500,
      trigger: 'event',
      outcome: 'retry_due',
      created_at: new Date(t0).toISOString(),
    });
    within(first!.next_attempt_at, t0, STEPS_MS[0]!);
    // Read from the delivery's job: the time it is due, exactly.
    const [pending] = await job();
    expect(Date.parse(first!.next_attempt_at!)).toBe(Number(pending!.run_at));

    t.clock.set(Date.parse(first!.next_attempt_at!));
    const t1 = t.clock.now();
    expect(await runner.runDue()).toBe(1);
    const [second, retried] = await log(id);
    expect(second).toMatchObject({ attempt: 2, status_code: 500, outcome: 'retry_due' });
    within(second!.next_attempt_at, t1, STEPS_MS[1]!);
    expect(retried).toMatchObject({ attempt: 1, outcome: 'retried', next_attempt_at: null });

    // The schedule has two retries: the third attempt is the last.
    t.clock.set(Date.parse(second!.next_attempt_at!));
    expect(await runner.runDue()).toBe(1);
    expect(await job()).toEqual([]);
    expect((await log(id)).map((d) => [d.attempt, d.outcome, d.next_attempt_at])).toEqual([
      [3, 'failed', null],
      [2, 'retried', null],
      [1, 'retried', null],
    ]);
    t.clock.advance(3_600_000);
    expect(await runner.runDue()).toBe(0);
  });

  it('says a delivered attempt is delivered, with no retry', async () => {
    status = 204;
    const id = await endpoint();
    await t.services.webhooks.sendTest(a.accountId, id);
    expect(await runner.runDue()).toBe(1);
    expect(await log(id)).toMatchObject([
      { attempt: 1, status_code: 204, trigger: 'event', outcome: 'succeeded', next_attempt_at: null },
    ]);
  });

  it('pauses the retry while the endpoint is disabled; enabling it makes it due at once', async () => {
    const id = await endpoint();
    await t.services.webhooks.sendTest(a.accountId, id);
    await runner.runDue();
    expect((await log(id))[0]).toMatchObject({ outcome: 'retry_due' });

    expect(
      (await send('PATCH', `/v1/webhook_endpoints/${id}`, { webhook_endpoint: { status: 'disabled' } })).statusCode,
    ).toBe(200);
    expect((await log(id))[0]).toMatchObject({ attempt: 1, outcome: 'paused', next_attempt_at: null });

    t.clock.advance(60_000);
    expect(
      (await send('PATCH', `/v1/webhook_endpoints/${id}`, { webhook_endpoint: { status: 'enabled' } })).statusCode,
    ).toBe(200);
    expect((await log(id))[0]).toMatchObject({
      attempt: 1,
      outcome: 'retry_due',
      next_attempt_at: new Date(t.clock.now()).toISOString(),
    });
  });

  it("marks a resend's attempts: a new delivery, numbered from 1, trigger resend, beside the first one's retries", async () => {
    const id = await endpoint();
    const ping = await t.services.webhooks.sendTest(a.accountId, id);
    await runner.runDue();

    status = 200;
    const resent = await send('POST', `/v1/events/${ping.id}/resend`, { webhook_endpoint_id: id });
    expect(resent.statusCode, resent.body).toBe(202);
    t.clock.advance(1);
    expect(await runner.runDue()).toBe(1);
    const [again, first] = await log(id);
    expect(again).toMatchObject({
      event_id: ping.id,
      attempt: 1,
      trigger: 'resend',
      status_code: 200,
      outcome: 'succeeded',
      next_attempt_at: null,
    });
    // The first delivery keeps its own retry: its attempt still says when.
    expect(first).toMatchObject({ event_id: ping.id, attempt: 1, trigger: 'event', outcome: 'retry_due' });

    // A resend that fails is retried on the schedule like any delivery, and still says it was a resend.
    status = 503;
    await send('POST', `/v1/events/${ping.id}/resend`, { webhook_endpoint_id: id });
    t.clock.advance(1);
    const before = t.clock.now();
    expect(await runner.runDue()).toBe(1);
    const [failing] = await log(id);
    expect(failing).toMatchObject({ attempt: 1, trigger: 'resend', status_code: 503, outcome: 'retry_due' });
    within(failing!.next_attempt_at, before, STEPS_MS[0]!);
  });
});

describe('followUp: what follows an attempt, from its delivery’s job', () => {
  const now = Date.UTC(2026, 0, 1, 12);
  const attempt = (fields: Partial<AttemptRow>): AttemptRow => ({
    id: 1,
    event_public_id: 'evt_x',
    event_type: 'ping',
    attempt: 2,
    status_code: 500,
    error: null,
    duration_ms: 5,
    response_body: '',
    created_at: now - 1000,
    trigger: 'event',
    ends_delivery: false,
    delivery: null,
    ...fields,
  });

  it('is a retry due now while the retry is under way, or since a lost claim ran out', () => {
    expect(followUp(attempt({ delivery: { runAt: now + 30_000, attempts: 3, leased: true } }), now)).toEqual({
      outcome: 'retry_due',
      nextAttemptAt: now,
    });
    expect(followUp(attempt({ delivery: { runAt: now - 5000, attempts: 3, leased: true } }), now)).toEqual({
      outcome: 'retry_due',
      nextAttemptAt: now - 5000,
    });
  });

  it('is retried for an attempt a later one followed, failed for the last, succeeded for a 2xx', () => {
    expect(followUp(attempt({ delivery: { runAt: now + 5000, attempts: 3, leased: false } }), now).outcome).toBe(
      'retried',
    );
    expect(followUp(attempt({ ends_delivery: true }), now)).toEqual({ outcome: 'failed', nextAttemptAt: null });
    expect(followUp(attempt({ ends_delivery: false }), now).outcome).toBe('retried');
    expect(followUp(attempt({ status_code: 201, ends_delivery: true }), now).outcome).toBe('succeeded');
  });
});
