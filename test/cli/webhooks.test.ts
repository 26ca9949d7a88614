import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliChecks, loyalty, loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

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
