import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { DEFAULT_EVENT_SETTINGS } from '../../src/config.js';
import { JobRunner } from '../../src/jobs/runner.js';
import { createServices } from '../../src/services.js';
import { openDb } from '../../src/storage/db.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { cliChecks, loyalty, loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { WebhookReceiver } from '../helpers/receiver.js';

/**
 * Makes the deliveries due now on the database at `url`, as a server's job runner would (a
 * retry schedule of one minute, loopback receivers allowed); answers how many were attempted.
 */
async function deliverDue(url: string): Promise<number> {
  const db = openDb(url, { poolMax: 2 });
  const services = createServices(db, {
    clock: systemClock,
    accessTokenTtlSeconds: 3600,
    events: { ...DEFAULT_EVENT_SETTINGS, webhookRetrySchedule: [60], webhookAllowPrivateNetworks: true },
  });
  const runner = new JobRunner(
    db,
    new UnitOfWork(db.kysely, systemClock),
    services.jobs,
    systemClock,
    [services.webhooks.deliveryJob()],
    pino({ level: 'silent' }),
  );
  try {
    return await runner.runDue();
  } finally {
    services.webhooks.deliverer.close();
    await db.close();
  }
}

// `loyalty webhooks …`: the same service as the API, `--json` printing the API's objects.
describe('loyalty webhooks', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let account: string;

  const { ok, fails } = cliChecks(() => env);

  beforeEach(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
    account = String((await ok(['accounts', 'create', '--name', 'Acme'])).id);
  });
  afterEach(async () => database.drop());

  it('creates an endpoint, printing its secret once, and lists, updates and deletes it', async () => {
    const created = await ok([
      'webhooks',
      'create',
      '--account',
      account,
      '--url',
      'https://receiver.example/hooks',
      '--events',
      'customer.created, points_purchase.created',
      '--description',
      'Checkout',
    ]);
    expect(created).toEqual({
      webhook_endpoint: {
        id: expect.any(Number),
        url: 'https://receiver.example/hooks',
        description: 'Checkout',
        enabled_events: ['customer.created', 'points_purchase.created'],
        status: 'enabled',
        created_at: expect.any(String),
        updated_at: expect.any(String),
        secret: expect.stringMatching(/^whsec_/),
      },
    });
    const { secret, ...shown } = created.webhook_endpoint;
    const id = String(shown.id);

    const listed = await ok(['webhooks', 'list', '--account', account]);
    expect(listed).toEqual({ webhook_endpoints: [shown], metadata: { next_cursor: '', previous_cursor: '' } });
    expect(JSON.stringify(listed)).not.toContain(secret);

    const updated = await ok(['webhooks', 'update', id, '--account', account, '--status', 'disabled', '--events', '*']);
    expect(updated.webhook_endpoint).toMatchObject({ id: shown.id, status: 'disabled', enabled_events: ['*'] });
    expect(updated.webhook_endpoint.secret).toBeUndefined();

    expect(await ok(['webhooks', 'delete', id, '--account', account])).toEqual({ deleted: true });
    expect((await ok(['webhooks', 'list', '--account', account])).webhook_endpoints).toEqual([]);
    expect((await fails(['webhooks', 'delete', id, '--account', account])).code).toBe('not_found');
  });

  it('defaults to every event, and refuses what the API refuses, writing nothing', async () => {
    const created = await ok(['webhooks', 'create', '--account', account, '--url', 'https://receiver.example/']);
    expect(created.webhook_endpoint.enabled_events).toEqual(['*']);
    for (const args of [
      ['--url', 'http://receiver.example/'],
      ['--url', 'https://127.0.0.1/'],
      ['--url', 'https://169.254.169.254/'],
      ['--url', 'https://receiver.example/', '--events', 'customer.deleted'],
      ['--url', 'https://receiver.example/', '--events', 'ping'],
      ['--url', 'https://receiver.example/', '--events', '*,customer.created'],
    ]) {
      const error = await fails(['webhooks', 'create', '--account', account, ...args]);
      expect(error.code, args.join(' ')).toBe('invalid_parameter');
      expect(error.details[0].field).toMatch(/^webhook_endpoint\.(url|enabled_events)/);
    }
    const other = String((await ok(['accounts', 'create', '--name', 'Other'])).id);
    const id = String(created.webhook_endpoint.id);
    expect((await fails(['webhooks', 'update', id, '--account', other, '--status', 'disabled'])).code).toBe(
      'not_found',
    );
    expect((await fails(['webhooks', 'update', id, '--account', account, '--status', 'paused'])).code).toBe(
      'invalid_parameter',
    );
    expect((await ok(['webhooks', 'list', '--account', account])).webhook_endpoints).toHaveLength(1);
  });

  it('allows a loopback receiver with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true', async () => {
    env = { ...env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
    const created = await ok(['webhooks', 'create', '--account', account, '--url', 'http://127.0.0.1:4000/hooks']);
    expect(created.webhook_endpoint.url).toBe('http://127.0.0.1:4000/hooks');
  });

  it('rotates the secret, sends a test event, lists the deliveries and resends an event', async () => {
    const created = await ok(['webhooks', 'create', '--account', account, '--url', 'https://receiver.example/']);
    const id = String(created.webhook_endpoint.id);
    const rotated = await ok(['webhooks', 'rotate-secret', id, '--account', account]);
    expect(rotated.webhook_endpoint.secret).toMatch(/^whsec_/);
    expect(rotated.webhook_endpoint.secret).not.toBe(created.webhook_endpoint.secret);

    const { event } = await ok(['webhooks', 'test', id, '--account', account]);
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'ping',
      account_id: Number(account),
      created_at: expect.any(String),
      data: {},
    });
    // No server runs here: the log is empty until a delivery is attempted.
    expect(await ok(['webhooks', 'deliveries', id, '--account', account, '--event', event.id])).toEqual({
      webhook_deliveries: [],
      metadata: { next_cursor: '', previous_cursor: '' },
    });
    expect(await ok(['webhooks', 'resend', '--account', account, '--event', event.id, '--endpoint', id])).toEqual({
      event_id: event.id,
      webhook_endpoint_id: Number(id),
      queued: true,
    });
    expect(
      (
        await fails([
          'webhooks',
          'resend',
          '--account',
          account,
          '--event',
          'evt_nope0000000000000000',
          '--endpoint',
          id,
        ])
      ).code,
    ).toBe('not_found');
    expect((await fails(['webhooks', 'deliveries', id, '--account', account, '--limit', '251'])).code).toBe(
      'invalid_parameter',
    );
  });

  it('says in the delivery log when a failed attempt is retried, and marks a resend', async () => {
    const receiver = await WebhookReceiver.start();
    try {
      env = { ...env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
      receiver.answer = () => ({ status: 503 });
      const created = await ok(['webhooks', 'create', '--account', account, '--url', receiver.url]);
      const id = String(created.webhook_endpoint.id);
      const { event } = await ok(['webhooks', 'test', id, '--account', account]);
      expect(await deliverDue(database.url)).toBe(1);

      const [failed] = (await ok(['webhooks', 'deliveries', id, '--account', account])).webhook_deliveries;
      expect(failed).toMatchObject({ event_id: event.id, attempt: 1, status_code: 503, outcome: 'retry_due' });
      expect(failed.trigger).toBe('event');
      const madeAt = Date.parse(failed.created_at);
      const dueAt = Date.parse(failed.next_attempt_at);
      // One minute after the attempt, up to 10 % later.
      expect(dueAt).toBeGreaterThanOrEqual(madeAt + 60_000);
      expect(dueAt).toBeLessThanOrEqual(madeAt + 66_000);
      const text = await loyaltyInProcess(['webhooks', 'deliveries', id, '--account', account], env);
      expect(text.code).toBe(0);
      expect(text.stdout.trim().split('\t')).toEqual([
        failed.created_at,
        event.id,
        'ping',
        'attempt 1',
        'HTTP 503',
        `${failed.duration_ms} ms`,
        `retry due at ${failed.next_attempt_at}`,
      ]);

      // A resend is a new delivery: its attempt is numbered 1 again, and says it was a resend.
      receiver.answer = () => ({ status: 200 });
      await ok(['webhooks', 'resend', '--account', account, '--event', event.id, '--endpoint', id]);
      expect(await deliverDue(database.url)).toBe(1);
      const [resent, first] = (await ok(['webhooks', 'deliveries', id, '--account', account])).webhook_deliveries;
      expect(resent).toMatchObject({ event_id: event.id, attempt: 1, trigger: 'resend', outcome: 'succeeded' });
      expect(resent.next_attempt_at).toBeNull();
      expect(first).toMatchObject({ attempt: 1, trigger: 'event', outcome: 'retry_due' });
      const lines = (await loyaltyInProcess(['webhooks', 'deliveries', id, '--account', account], env)).stdout
        .trim()
        .split('\n')
        .map((line) => line.split('\t').slice(3));
      expect(lines).toEqual([
        ['attempt 1 (resend)', 'HTTP 200', `${resent.duration_ms} ms`, 'delivered'],
        ['attempt 1', 'HTTP 503', `${first.duration_ms} ms`, `retry due at ${first.next_attempt_at}`],
      ]);
    } finally {
      await receiver.close();
    }
  });

  it('prints readable text without --json, the secret once', async () => {
    const created = await loyaltyInProcess(
      [
        'webhooks',
        'create',
        '--account',
        account,
        '--url',
        'https://receiver.example/',
        '--events',
        'customer.created',
      ],
      env,
    );
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/secret: +whsec_/);
    expect(created.stdout).toContain('https://receiver.example/');
    const listed = await loyaltyInProcess(['webhooks', 'list', '--account', account], env);
    expect(listed.stdout).toContain('customer.created');
    expect(listed.stdout).not.toContain('whsec_');
  });

  it('runs as the real `loyalty` process', async () => {
    const created = await ok(
      ['webhooks', 'create', '--account', account, '--url', 'https://receiver.example/'],
      loyalty,
    );
    expect(created.webhook_endpoint.secret).toMatch(/^whsec_/);
  });
});
