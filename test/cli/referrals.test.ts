import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/clock.js';
import type { Referral } from '../../src/referrals/schemas.js';
import { createServices, type Services } from '../../src/services.js';
import { type Db, openDb } from '../../src/storage/db.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { FakeClock } from '../helpers/app.js';
import { cliChecks, loyalty, loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { referralSettingsFixture as spec } from '../helpers/fixtures.js';

// `loyalty referral-settings set` with the program's fields (../shared/referrals-contract.md,
// "Console and CLI") and `loyalty referrals list`, against data the services write on the same
// database (as the API would).

const DAY_MS = 86_400_000;
const REFERRAL_BASE_URL = 'https://refer.example/r';

describe('loyalty referral-settings set / loyalty referrals list', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let dir: string;
  let db: Db;
  let account: number;
  const { ok, fails } = cliChecks(() => env);

  /** The services on the test's database, with `clock`, as the API's process would hold them. */
  const servicesAt = (clock: Clock): Services =>
    createServices(db, { clock, accessTokenTtlSeconds: 3600, referralBaseUrl: REFERRAL_BASE_URL });
  const file = (name: string, content: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(content));
    return path;
  };

  beforeEach(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url, REFERRAL_BASE_URL };
    dir = mkdtempSync(join(tmpdir(), 'loyalty-referrals-'));
    db = openDb(database.url);
    account = (await ok(['accounts', 'create', '--name', 'Acme'])).id;
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
  });

  it('set prints the whole program for a file with program fields, the spec’s shape for a spec-only file', async () => {
    const services = servicesAt(systemClock);
    const { token } = await services.activityTypes.create(account, { name: 'Order' });
    const running = file('program.json', {
      ...spec,
      qualifying_activity_token: token,
      landing_url: 'https://shop.example/welcome',
      minimum_amount: '25.50',
      sender_reward: { ...spec.sender_reward, fulfillment: 'points', points: 200 },
    });
    const whole = {
      ...spec,
      sender_reward: { ...spec.sender_reward, fulfillment: 'points', points: 200 },
      receiver_reward: { ...spec.receiver_reward, fulfillment: 'code', points: null },
      qualifying_activity_token: token,
      minimum_amount: '25.5',
      window_days: 30,
      landing_url: 'https://shop.example/welcome',
      sender_limit_per_30_days: 50,
    };
    // The real process once; the rest in this one.
    expect(await ok(['referral-settings', 'set', '--account', String(account), '--file', running], loyalty)).toEqual(
      whole,
    );
    expect(await ok(['referral-settings', 'show', '--account', String(account)])).toEqual(whole);
    const text = await loyaltyInProcess(['referral-settings', 'show', '--account', String(account)], env);
    expect(JSON.parse(text.stdout)).toEqual(whole);

    const plain = file('spec.json', spec);
    expect(await ok(['referral-settings', 'set', '--account', String(account), '--file', plain])).toEqual(spec);
    expect(await ok(['referral-settings', 'show', '--account', String(account)])).toEqual(spec);
    expect(await services.referralSettings.program(account)).toMatchObject({
      status: 'active',
      qualifying_activity_token: null,
      landing_url: null,
    });

    // An active program naming a program field needs both the token and the landing URL.
    const half = file('half.json', { ...spec, qualifying_activity_token: token });
    const error = await fails(['referral-settings', 'set', '--account', String(account), '--file', half]);
    expect(error).toMatchObject({
      code: 'invalid_parameter',
      details: [{ field: 'referral_settings.landing_url', message: expect.any(String) }],
    });
    expect(await ok(['referral-settings', 'show', '--account', String(account)])).toEqual(spec);
  });

  it('referrals list prints the API’s referral objects, newest first, filtered by status', async () => {
    const services = servicesAt(systemClock);
    const { token } = await services.activityTypes.create(account, { name: 'Order' });
    await services.referralSettings.set(account, {
      ...spec,
      qualifying_activity_token: token,
      landing_url: 'https://shop.example/',
    });
    const jane = (await services.customers.create(account, { email: 'jane@example.com' })).id;
    const refer = (clock: Clock, email: string) =>
      new UnitOfWork(db.kysely, clock).run((w) =>
        servicesAt(clock).referrals.create(w, account, { sender_customer_id: jane, receiver_customer_email: email }),
      );
    // Made 40 days ago: expired. Then one completed, one pending.
    const expired = await refer(new FakeClock(Date.now() - 40 * DAY_MS), 'old@example.com');
    const completed = await refer(systemClock, 'done@example.com');
    await services.activities.record(account, { token, customer_email: 'done@example.com' });
    const pending = await refer(systemClock, 'new@example.com');

    const listed: Referral[] = await ok(['referrals', 'list', '--account', String(account)]);
    expect(listed.map((r) => r.id)).toEqual([pending.id, completed.id, expired.id]);
    expect(listed).toEqual((await services.referrals.page(account, {})).referrals);
    expect(listed.map((r) => r.status)).toEqual(['pending', 'completed', 'expired']);
    expect(listed[2]).toMatchObject({ ...expired, status: 'expired', sender_customer: expect.any(Object) });
    expect(listed[0]!.sender_customer.referral_url).toMatch(new RegExp(`^${REFERRAL_BASE_URL}/[0-9A-Za-z]{8,}$`));
    for (const [status, referral] of [
      ['expired', expired],
      ['completed', completed],
      ['pending', pending],
    ] as const) {
      const only: Referral[] = await ok(['referrals', 'list', '--account', String(account), '--status', status]);
      expect(only.map((r) => [r.id, r.status])).toEqual([[referral.id, status]]);
    }
    expect(await fails(['referrals', 'list', '--account', String(account), '--status', 'lost'])).toMatchObject({
      code: 'invalid_parameter',
      details: [{ field: 'status' }],
    });
    expect(await fails(['referrals', 'list', '--account', '999999'])).toMatchObject({ code: 'not_found' });

    // The text form: one line per referral; the real process.
    const text = await loyalty(['referrals', 'list', '--account', String(account), '--status', 'completed'], env);
    expect(text.code).toBe(0);
    expect(text.stderr).toBe('');
    const lines = text.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^#${completed.id} +completed `));
    expect(lines[0]).toContain('friend done@example.com');
    const other = (await ok(['accounts', 'create', '--name', 'Empty'])).id;
    expect(await ok(['referrals', 'list', '--account', String(other)])).toEqual([]);
    expect((await loyaltyInProcess(['referrals', 'list', '--account', String(other)], env)).stdout.trim()).toBe(
      '(no referrals)',
    );
  });
});
