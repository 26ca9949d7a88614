import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../src/auth/scopes.js';
import { type CliResult, loyalty, loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, storedText, type TestDatabase } from '../helpers/database.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';

describe('the loyalty CLI', () => {
  // The files the commands read; the database is the pass's (test/helpers/database.ts).
  let dir: string;
  let database: TestDatabase;
  let env: Record<string, string>;
  const extra: TestDatabase[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loyalty-cli-'));
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
  });
  afterEach(async () => {
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
    for (const other of extra.splice(0)) await other.drop();
  });

  /**
   * Runs a command with --json, in this process unless `cli` says otherwise (a few tests run the
   * real `loyalty` process); it must succeed with nothing on stderr.
   */
  const ok = async (args: string[], cli: typeof loyalty = loyaltyInProcess) => {
    const result: CliResult = await cli([...args, '--json'], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    return result.json();
  };

  it('creates an account, an API key, an app and a token, printing the contract JSON', async () => {
    const account = await ok(['accounts', 'create', '--name', 'Acme']);
    expect(account).toEqual({ id: expect.any(Number), name: 'Acme' });

    const key = await ok([
      'api-keys',
      'create',
      '--account',
      String(account.id),
      '--scopes',
      'earning_rule:read referral_settings:read',
    ]);
    expect(key).toEqual({
      id: expect.any(Number),
      key: expect.stringMatching(/^api_[0-9A-Za-z]{32,}$/),
      scopes: ['referral_settings:read', 'earning_rule:read'],
    });
    const allScopes = await ok(['api-keys', 'create', '--account', String(account.id)]);
    expect(allScopes.scopes).toEqual([...ALL_SCOPES]);
    expect(allScopes.scopes).toEqual(
      expect.arrayContaining(['customer:read', 'activity:write', 'points_transaction:write']),
    );

    const app = await ok([
      'apps',
      'create',
      '--name',
      'Reviews',
      '--scopes',
      'customer_identity:write',
      '--redirect-uri',
      'https://reviews.example/cb',
      '--redirect-uri',
      'http://localhost:8080/cb',
    ]);
    expect(app).toEqual({
      id: expect.any(Number),
      client_id: expect.stringMatching(/^app_/),
      client_secret: expect.stringMatching(/^cs_[0-9A-Za-z]{32,}$/),
      scopes: ['customer_identity:write'],
      redirect_uris: ['https://reviews.example/cb', 'http://localhost:8080/cb'],
    });

    const token = await ok([
      'tokens',
      'issue',
      '--account',
      String(account.id),
      '--app',
      app.client_id,
      '--ttl',
      '120',
    ]);
    expect(token).toEqual({
      access_token: expect.stringMatching(/^oa2_[0-9A-Za-z]{32,}$/),
      token_type: 'Bearer',
      expires_in: 120,
      scope: 'customer_identity:write',
    });

    const listed = await ok(['api-keys', 'list', '--account', String(account.id)]);
    expect(JSON.stringify(listed)).not.toContain(key.key);
    expect(listed[0].key).toBe(`${key.key.slice(0, 8)}…`);

    expect(await ok(['api-keys', 'revoke', String(key.id)])).toEqual({ id: key.id, revoked: true });
  });

  it('sets, shows and deletes referral settings from a file', async () => {
    const account = await ok(['accounts', 'create', '--name', 'Acme']);
    const file = join(dir, 'referral.json');
    writeFileSync(file, JSON.stringify(referralSettingsFixture));
    expect(await ok(['referral-settings', 'set', '--account', String(account.id), '--file', file])).toEqual(
      referralSettingsFixture,
    );
    expect(await ok(['referral-settings', 'show', '--account', String(account.id)])).toEqual(referralSettingsFixture);
    expect(await ok(['referral-settings', 'delete', '--account', String(account.id)])).toEqual({ deleted: true });
  });

  it('reports errors on stderr with a non-zero exit and nothing on stdout', async () => {
    const account = await ok(['accounts', 'create', '--name', 'Acme']);
    const cases: [string[], RegExp][] = [
      [['api-keys', 'create', '--account', '999'], /account 999 does not exist/],
      [['api-keys', 'create', '--account', 'abc'], /account must be a positive whole number/],
      [['api-keys', 'create', '--account', String(account.id), '--scopes', 'admin'], /unknown scope "admin"/],
      [['api-keys', 'revoke', '12345'], /API key 12345 does not exist/],
      [['tokens', 'issue', '--account', String(account.id), '--app', 'app_missing'], /app_missing does not exist/],
      [['apps', 'create', '--name', 'X', '--redirect-uri', 'http://evil.example/cb'], /must use https/],
      [
        ['referral-settings', 'set', '--account', String(account.id), '--file', join(dir, 'missing.json')],
        /cannot read/,
      ],
      [['referral-settings', 'delete', '--account', String(account.id)], /has no referral settings/],
    ];
    for (const [args, message] of cases) {
      const result = await loyaltyInProcess([...args, '--json'], env);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stdout).toBe('');
      expect(JSON.parse(result.stderr).error.message).toMatch(message);
    }
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ...referralSettingsFixture, status: 'paused' }));
    const invalid = await loyaltyInProcess(
      ['referral-settings', 'set', '--account', String(account.id), '--file', bad],
      env,
    );
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/referral_settings\.status/);
  });

  // The real process, as for `migrate` and `demo` below; the other tests run the same program in this one.
  it('refuses a scope an app is not registered for', async () => {
    const account = await ok(['accounts', 'create', '--name', 'Acme'], loyalty);
    const app = await ok(['apps', 'create', '--name', 'Narrow', '--scopes', 'earning_rule:read'], loyalty);
    const result = await loyalty(
      [
        'tokens',
        'issue',
        '--account',
        String(account.id),
        '--app',
        app.client_id,
        '--scopes',
        'customer_identity:write',
        '--json',
      ],
      env,
    );
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr).error).toMatchObject({
      code: 'invalid_parameter',
      message: expect.stringMatching(/not registered/),
    });
  });

  it('refuses an explicitly empty scope list instead of granting every scope', async () => {
    const account = await ok(['accounts', 'create', '--name', 'Acme']);
    const app = await ok(['apps', 'create', '--name', 'A', '--redirect-uri', 'https://a.example/cb']);
    for (const empty of ['', ' ', ',']) {
      for (const args of [
        ['api-keys', 'create', '--account', String(account.id)],
        ['tokens', 'issue', '--account', String(account.id), '--app', app.client_id],
      ]) {
        const result = await loyaltyInProcess([...args, '--scopes', empty, '--json'], env);
        expect(result.code, `${args[0]} --scopes ${JSON.stringify(empty)}`).toBe(1);
        expect(result.stdout).toBe('');
        expect(JSON.parse(result.stderr).error).toMatchObject({
          code: 'invalid_parameter',
          message: expect.stringMatching(/at least one scope/),
        });
      }
    }
    // Nothing was created by the refusals.
    expect(await ok(['api-keys', 'list', '--account', String(account.id)])).toEqual([]);
  });

  // The real process (see above).
  it('migrates an empty database and reports it', async () => {
    const empty = await createTestDatabase({ empty: true });
    extra.push(empty);
    env = { DATABASE_URL: empty.url };
    const first = await ok(['migrate'], loyalty);
    expect(first.applied.length).toBeGreaterThan(0);
    expect((await ok(['migrate'], loyalty)).applied).toEqual([]);
  });

  it('stores no secret in clear: the database files hold only hashes', async () => {
    const account = await ok(['accounts', 'create', '--name', 'Acme']);
    const key = await ok(['api-keys', 'create', '--account', String(account.id)]);
    const app = await ok(['apps', 'create', '--name', 'A', '--redirect-uri', 'https://a.example/cb']);
    const token = await ok(['tokens', 'issue', '--account', String(account.id), '--app', app.client_id]);
    const demo = await ok(['demo']);
    const stored = await storedText(database.url);
    expect(stored.length).toBeGreaterThan(0);
    for (const secret of [key.key, app.client_secret, token.access_token, demo.api_key, demo.access_token]) {
      expect(stored).not.toContain(secret);
      // Not even the random part, in case a prefix were stored apart from the rest.
      expect(stored).not.toContain(secret.slice(8));
    }
  });
});

describe('loyalty demo', () => {
  let database: TestDatabase;
  let server: ServerProcess | undefined;
  afterEach(async () => {
    await server?.stop();
    await database.drop();
  });

  it('leaves working credentials, and its printed curl lines work as printed', async () => {
    database = await createTestDatabase();
    const port = String(await freePort());
    const env = { DATABASE_URL: database.url, PORT: port };

    const json = await loyalty(['demo', '--json'], env);
    expect(json.code).toBe(0);
    const demo = json.json();
    expect(demo).toEqual({
      account_id: expect.any(Number),
      api_key: expect.stringMatching(/^api_/),
      access_token: expect.stringMatching(/^oa2_/),
      base_url: `http://127.0.0.1:${port}/v1`,
      activity_token: expect.stringMatching(/^activity_[0-9A-Za-z]{14,}$/),
      customer_id: expect.any(Number),
      points_product_id: expect.any(Number),
      referral_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/r\/[0-9A-Za-z]{12}$/),
      console_url: `http://127.0.0.1:${port}/admin`,
      console_email: expect.stringMatching(/^demo-\d+@example\.com$/),
      console_password: expect.any(String),
    });

    const text = await loyalty(['demo'], env);
    expect(text.code).toBe(0);
    const curls = text.stdout.split('\n').filter((line) => line.startsWith('curl '));
    expect(curls.length).toBeGreaterThanOrEqual(3);

    server = await startServer({ ...env, RATE_LIMIT_PER_SECOND: '0' });
    const answers = [];
    for (const line of curls) {
      const { stdout } = await promisify(execFile)('sh', ['-c', `${line} -w '\\n%{http_code}'`]);
      const [body, status] = [stdout.slice(0, stdout.lastIndexOf('\n')), stdout.slice(stdout.lastIndexOf('\n') + 1)];
      answers.push({ line, status, body: JSON.parse(body) });
    }
    const referral = answers.find((a) => a.line.includes('/referral_settings'));
    expect(referral?.status).toBe('200');
    expect(referral?.body.referral_settings).toMatchObject({
      status: 'active',
      sender_reward: { name: expect.any(String) },
    });
    for (const answer of answers) expect(Number(answer.status), answer.line).toBeLessThan(300);
    // The whole referral: Sam referred with Jane's code (his reward code at once), his first order
    // completing it, and Jane's reward in her referrals.
    const referred = answers.find((a) => a.line.includes('-X POST') && a.line.includes('/referrals'));
    expect(referred?.status).toBe('201');
    expect(referred?.body.referral).toMatchObject({
      status: 'pending',
      receiver_customer_email: 'sam@example.com',
      receiver_reward_fulfillment: { code: expect.any(String), name: '10% off your first order' },
    });
    const janes = answers.find((a) => a.line.includes('/referrals?sender_customer_id='));
    expect(janes?.body.referrals).toMatchObject([
      { status: 'completed', sender_reward_fulfillment: { code: expect.any(String), name: '$5 off coupon' } },
    ]);

    // The JSON-mode credentials work too.
    const response = await fetch(`${demo.base_url}/referral_settings`, {
      headers: { authorization: `Bearer ${demo.api_key}` },
    });
    expect(response.status).toBe(200);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
