import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp, testEngine } from '../helpers/app.js';
import { fixedRule, program } from '../helpers/engine.js';
import { runningProgram } from '../referrals/program.js';

// Issue 50, point 1: on SQLite the writes that finish in one turn of the event loop share one
// durable COMMIT (src/storage/sqlite-driver.ts). A write transaction that waits for a later turn
// (a cache asking the change feed, a timer) lets the group commit under it, and steady load pays
// an fsync for every request or two instead of one for a whole turn's. These drive the server as
// a load generator does (connections each sending their next request as the answer comes, over
// real sockets) and count the transactions per durable COMMIT.

const CONNECTIONS = 16;
const REQUESTS = 12;

describe.skipIf(testEngine !== 'sqlite')('commit groups under steady concurrent writes (SQLite)', () => {
  let t: TestApp;
  let a: Tenant;
  let base: string;

  beforeEach(async () => {
    t = await createTestApp();
    a = await createTenant(t.services);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterEach(async () => t.close());

  // create_or_update takes an app's access token only; the rest take either.
  const post = (path: string, body: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { ...bearer(a.accessToken), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  /** Runs CONNECTIONS loops of REQUESTS requests each; answers the transactions per durable COMMIT. */
  async function perCommit(request: (connection: number, i: number) => Promise<Response>): Promise<number> {
    const stats = t.db.sqlite!.stats;
    const before = { ...stats };
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, connection) => {
        for (let i = 0; i < REQUESTS; i++) {
          const answer = await request(connection, i);
          expect(answer.status, await answer.text()).toBeLessThan(300);
        }
      }),
    );
    return (stats.transactions - before.transactions) / Math.max(stats.commits - before.commits, 1);
  }

  it('shares COMMITs among activities (a running referral program read in each) and new identities', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [fixedRule('Order', 10, tk)]);
    await runningProgram(t, a.accountId);
    const activity = (connection: number, i: number) => ({
      activity: { token, customer_email: `shopper-${connection}-${i % 3}@example.com` },
    });
    // Warm: the connections open, the customers exist, the caches hold the account's values.
    await perCommit((connection, i) => post('/v1/activities', activity(connection, i)));

    const activities = await perCommit((connection, i) => post('/v1/activities', activity(connection, i)));
    const identities = await perCommit((connection, i) =>
      post('/v1/customer_identities/create_or_update', {
        customer_identity: { email: `new-${connection}-${i}@example.com`, distinct_id: `new-${connection}-${i}` },
      }),
    );
    // Measured here: activities 2.0 while the referral program's cache waited for the change
    // feed's reading inside the transaction, 4.6 since; identities 16 (one COMMIT per round of
    // the connections). The client shares the event loop, so a round reaches the writer over a
    // few turns: the bound sits between the broken and the sound figures.
    expect(activities).toBeGreaterThanOrEqual(3.3);
    expect(identities).toBeGreaterThanOrEqual(3.3);
  }, 60_000);
});
