import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp, testEngine } from '../helpers/app.js';
import { fixedRule, program } from '../helpers/engine.js';
import { eventually } from '../helpers/wait.js';

// Issue 50, point 3: on PostgreSQL an update of a row is HOT (heap-only: no index entry written)
// when it changes no indexed column and its page has room. Every credit updates the customer's
// balance and updated_at; while updated_at was indexed, every one of those updates wrote an entry
// into each of the table's indexes (29 % HOT under the activities load, against 99 % before).

const CUSTOMERS = 20;
const ACTIVITIES = 400;

describe.skipIf(testEngine !== 'postgres')('HOT updates of customers under activities (PostgreSQL)', () => {
  let t: TestApp;
  let a: Tenant;
  beforeEach(async () => {
    t = await createTestApp();
    a = await createTenant(t.services);
  });
  afterEach(async () => t.close());

  /** The table's updates and HOT updates so far, as the statistics collector has them. */
  const updates = async () => {
    const { rows } = await sql<{ updated: string; hot: string }>`
      select n_tup_upd as updated, n_tup_hot_upd as hot from pg_stat_user_tables
      where relid = 'customers'::regclass`.execute(t.db.kysely);
    return { updated: Number(rows[0]?.updated ?? 0), hot: Number(rows[0]?.hot ?? 0) };
  };

  it('updates at least 90 % of the customers rows HOT', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [fixedRule('Order', 10, tk)]);
    const post = (i: number) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/activities',
        headers: bearer(a.apiKey),
        payload: { activity: { token, customer_email: `shopper-${i % CUSTOMERS}@example.com` } },
      });
    for (let i = 0; i < CUSTOMERS; i++) expect((await post(i)).statusCode).toBe(201);
    // The statistics reach the collector when a backend goes idle, at most once a second.
    await eventually(async () => (await updates()).updated > 0, 5000);
    const before = await updates();
    for (let round = 0; round < ACTIVITIES / 10; round++) {
      // Time moves on between rounds, as it does between a shop's orders.
      t.clock.advance(1000);
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(round * 10 + i)));
      for (const answer of answers) expect(answer.statusCode, answer.body).toBe(201);
    }
    await eventually(async () => (await updates()).updated - before.updated >= ACTIVITIES, 10_000);
    const after = await updates();
    const ratio = (after.hot - before.hot) / (after.updated - before.updated);
    console.log({ ratio, updated: after.updated - before.updated });
    expect(ratio).toBeGreaterThanOrEqual(0.9);
  }, 60_000);
});
