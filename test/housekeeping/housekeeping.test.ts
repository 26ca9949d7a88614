import { sql } from 'kysely';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Chore, choresOf, Housekeeping } from '../../src/housekeeping.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/wait.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const silent = pino({ level: 'silent' });

describe('housekeeping on a real database', () => {
  let t: TestApp;
  let a: Tenant;
  beforeEach(async () => {
    t = await createTestApp();
    a = await createTenant(t.services);
  });
  afterEach(() => t.close());

  const adjust = (customerId: number, key: string) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/points_transactions',
      headers: { ...bearer(a.apiKey), 'idempotency-key': key },
      payload: { points_transaction: { customer_id: customerId, points_change: 5 } },
    });
  const keys = async () =>
    (await t.db.kysely.selectFrom('idempotency_keys').select('key').orderBy('key').execute()).map((row) => row.key);

  it('purges the idempotency keys past their 24 hours, not before, and never on a request', async () => {
    const jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
    for (let i = 0; i < 5; i++) expect((await adjust(jane, `old-${i}`)).statusCode).toBe(201);
    t.clock.advance(DAY_MS);
    expect((await adjust(jane, 'new')).statusCode).toBe(201);
    const housekeeping = new Housekeeping(choresOf(t.services, t.db, new UnitOfWork(t.db.kysely, t.clock)), silent);

    // Exactly 24 hours old: still replayable, so kept.
    expect((await housekeeping.runOnce())['idempotency keys past 24 hours']).toBe(0);
    t.clock.advance(1);
    // Requests no longer purge: hundreds of keyed writes leave the expired keys where they are.
    expect(await keys()).toEqual(['new', 'old-0', 'old-1', 'old-2', 'old-3', 'old-4']);
    expect((await housekeeping.runOnce())['idempotency keys past 24 hours']).toBe(5);
    expect(await keys()).toEqual(['new']);
  });

  it('runs every chore of the services, each reporting the rows it removed', async () => {
    const removed = await new Housekeeping(
      choresOf(t.services, t.db, new UnitOfWork(t.db.kysely, t.clock)),
      silent,
    ).runOnce();
    expect(removed).toEqual({
      'idempotency keys past 24 hours': 0,
      'expired sessions and sign-in throttles': 0,
      'expired authorization codes': 0,
      'query planner statistics': 0,
    });
  });

  it("keeps the planner's statistics current: a table that grew is analyzed by the next pass", async () => {
    const housekeeping = new Housekeeping(choresOf(t.services, t.db, new UnitOfWork(t.db.kysely, t.clock)), silent);
    const analyzed = async () => {
      if (t.db.dialect === 'sqlite') {
        const { rows } = await sql<{ n: number }>`select count(*) as n from sqlite_stat1 where tbl = 'customers'`
          .execute(t.db.kysely)
          .catch(() => ({ rows: [{ n: 0 }] }));
        return Number(rows[0]?.n) > 0;
      }
      const { rows } = await sql<{ at: Date | null }>`select coalesce(last_analyze, last_autoanalyze) as at
        from pg_stat_user_tables where schemaname = current_schema() and relname = 'customers'`.execute(t.db.kysely);
      return rows[0]?.at != null;
    };
    // A new database has none; once customers arrived, a pass gathers theirs.
    expect(await analyzed()).toBe(false);
    for (let i = 0; i < 300; i++) await t.services.customers.create(a.accountId, { email: `c${i}@example.com` });
    // PostgreSQL counts the changes a moment after they commit: a pass may come before they show.
    expect(
      await eventually(async () => (await housekeeping.runOnce()) !== undefined && (await analyzed()), 15_000, 250),
    ).toBe(true);
  });
});

describe('the chores as a job', () => {
  const chore = (name: string, run: () => Promise<number>): Chore => ({ name, run });

  it('logs a failing chore and still runs the others', async () => {
    const warnings: unknown[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line)) });
    const removed = await new Housekeeping(
      [chore('broken', () => Promise.reject(new Error('database away'))), chore('fine', async () => 2)],
      log,
    ).runOnce();
    expect(removed).toEqual({ fine: 2 });
    expect(warnings).toMatchObject([{ chore: 'broken', msg: expect.stringContaining('failed') }]);
  });

  it('is a recurring job: one pass per run, the next due an interval later', async () => {
    let passes = 0;
    let now = 1_000;
    const job = new Housekeeping([chore('count', async () => ++passes)], silent).job({ now: () => now }, 300);
    expect(job.schedule?.key).toBe('housekeeping');
    const outcome = await job.run({} as never);
    expect(passes).toBe(1);
    expect(outcome).toEqual({ runAt: 1_300 });
    now = 5_000;
    expect(await job.run({} as never)).toEqual({ runAt: 5_300 });
    expect(passes).toBe(2);
  });
});
