import http from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { fixedRule, unbalancedCustomers, variableRule } from '../helpers/engine.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { exitWithin, NoResponse, openStore, Servers, sendJson } from './support.js';

// SIGKILL a real server process while clients record activities, each of which credits two
// rules (a fixed 3 points and 1 point per 1 of its amount), restart it on the same database, and
// check: every acknowledged activity is there with both credits, no activity has only one, and
// every balance equals the sum of its ledger.

const ROUNDS = 2;
const CLIENTS = 16;
const ACKS_BEFORE_KILL = 60;
const CUSTOMERS = 6;

interface Sent {
  distinctId: string;
  amount: number;
}

describe(`crash safety of the ledger: SIGKILL while activities are recorded (${testEngine})`, () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let tenant: Tenant;
  let token = '';
  let store: Db;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    tenant = await seedTenant(database.url, 'Crash shop', async (services, t) => {
      const type = await services.activityTypes.create(t.accountId, { name: 'Order' });
      await services.earningRules.create(t.accountId, [
        fixedRule('Bonus', 3, type.token),
        variableRule('Spend', 1, 1, type.token),
      ]);
      token = type.token;
    });
  });
  afterAll(async () => {
    await store?.close();
    await servers.killAll();
    await database?.drop();
  });

  it(`keeps every acknowledged activity with all its credits across ${ROUNDS} kills`, async () => {
    const acked = new Map<string, Sent>();
    const inFlight = new Map<string, Sent>();
    const env = { DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' };
    let server: ServerProcess = await servers.start(env);

    const client = async (target: ServerProcess, name: string, agent: http.Agent) => {
      for (let n = 0; ; n++) {
        const sent = { distinctId: `${name}-${n}`, amount: 1 + ((n * 7) % 50) };
        inFlight.set(sent.distinctId, sent);
        try {
          const reply = await sendJson(
            target.url,
            'POST',
            '/v1/activities',
            tenant.apiKey,
            {
              activity: {
                token,
                customer_email: `c${n % CUSTOMERS}@example.com`,
                distinct_id: sent.distinctId,
                properties: { amount: sent.amount },
              },
            },
            { agent, timeoutMs: 10_000 },
          );
          if (reply.status === 503) continue;
          if (reply.status !== 201) throw new Error(`refused before the crash: ${reply.status} ${reply.body}`);
          inFlight.delete(sent.distinctId);
          acked.set(sent.distinctId, sent);
        } catch (error) {
          if (!(error instanceof NoResponse)) throw error;
          return; // the server is gone; this one stays in flight
        }
      }
    };

    for (let round = 0; round < ROUNDS; round++) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
      const target = acked.size + ACKS_BEFORE_KILL;
      const clients = Array.from({ length: CLIENTS }, (_, i) => client(server, `r${round}c${i}`, agent));
      while (acked.size < target) await new Promise((resolve) => setTimeout(resolve, 5));
      server.child.kill('SIGKILL');
      await Promise.all(clients);
      agent.destroy();
      expect(await exitWithin(server, 10_000)).toBeNull();
      server = await servers.start(env);
    }

    store = openStore(database.url);
    const { rows } = await sql<{ distinct_id: string; credits: string | number; points: string | number }>`
      select a.distinct_id, count(t.id) as credits, coalesce(sum(t.points_change), 0) as points
      from activities a left join points_transactions t on t.activity_id = a.id
      where a.account_id = ${tenant.accountId} and a.distinct_id is not null
      group by a.distinct_id`.execute(store.kysely);
    const stored = new Map(
      rows.map((row) => [row.distinct_id, { credits: Number(row.credits), points: Number(row.points) }]),
    );

    const wrong: string[] = [];
    for (const [distinctId, sent] of acked) {
      const row = stored.get(distinctId);
      const whole = row?.credits === 2 && row.points === 3 + sent.amount;
      if (!whole) wrong.push(`${distinctId}: ${JSON.stringify(row)}`);
    }
    // Activities whose answer was lost are there whole or not at all.
    for (const [distinctId, row] of stored) {
      const sent = acked.get(distinctId) ?? inFlight.get(distinctId);
      if (!sent) wrong.push(`${distinctId}: stored but never sent`);
      else if (row.credits !== 2 || row.points !== 3 + sent.amount)
        wrong.push(`${distinctId}: partial ${JSON.stringify(row)}`);
    }
    expect(wrong).toEqual([]);
    expect(await unbalancedCustomers(store.kysely)).toEqual([]);
    if (testEngine === 'sqlite') {
      const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(store.kysely);
      expect(integrity.rows).toEqual([{ integrity_check: 'ok' }]);
    }
    console.log(
      `ledger crash (${testEngine}): ${ROUNDS} kills, ${acked.size} acknowledged activities, ${stored.size} stored, ` +
        `${inFlight.size} in flight at a kill`,
    );
  }, 120_000);
});
