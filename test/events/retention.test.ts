import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';

// Events are kept EVENT_RETENTION_DAYS (30 by default), then deleted by a recurring job in short
// batches; what goes with them (the delivery log) goes by the foreign key.

const DAY_MS = 24 * 60 * 60 * 1000;

describe('event retention', () => {
  let t: TestApp;
  let a: Tenant;
  beforeEach(async () => {
    t = await createTestApp({ EVENT_RETENTION_DAYS: '30' });
    a = await createTenant(t.services);
  });
  afterEach(() => t.close());

  const record = (count: number) =>
    new UnitOfWork(t.db.kysely, t.clock).run(async (w) => {
      for (let i = 0; i < count; i++)
        t.services.events.record(w, a.accountId, 'customer.created', { customer: { id: i } });
    });
  const stored = async () =>
    Number(
      (
        await t.db.kysely
          .selectFrom('events')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('deletes the events past the retention, not before, in batches, and says when none is left', async () => {
    const before = await stored();
    await record(1205);
    t.clock.advance(10 * DAY_MS);
    await record(3);
    t.clock.advance(20 * DAY_MS);
    // The first 1,205 are exactly 30 days old: kept.
    expect(await t.services.events.deleteExpired()).toEqual({ deleted: 0, done: true });
    t.clock.advance(1);
    expect(await t.services.events.deleteExpired()).toEqual({ deleted: 1205 + before, done: true });
    expect(await stored()).toBe(3);
  });

  it('stops a run at its time budget and continues at once in the next', async () => {
    await record(2500);
    t.clock.advance(31 * DAY_MS);
    // A budget of 0: one batch per run, the job due again at once.
    expect(await t.services.events.deleteExpired(0)).toMatchObject({ deleted: 1000, done: false });
    const job = t.services.events.retentionJob();
    expect(job.schedule?.key).toBe('events.retention');
    const outcome = await job.run({} as never);
    expect('runAt' in outcome && outcome.runAt).toBe(t.clock.now() + 60 * 60 * 1000);
    expect(await stored()).toBe(0);
  });
});
