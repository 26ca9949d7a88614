import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { fixedRule, variableRule } from '../helpers/engine.js';
import { createEndpoint, eventIdsAfter, lastEventId, pendingDeliveries, WebhookReceiver } from '../helpers/receiver.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';
import { exitWithin, NoResponse, openStore, Servers, sendJson } from './support.js';

// At least once, across crashes (events-contract.md, "Deliveries"): an endpoint subscribed to
// every event, a real receiver verifying each delivery with the `standardwebhooks` package, and
// clients recording activities and buying rewards against a real server process that is killed
// with SIGKILL mid-burst (twice) and restarted on the same database. Once the queue drains, every
// event of a committed change has arrived, nothing arrived that the database does not hold (a
// rolled-back change has no event), every acknowledged activity and purchase has its event, and
// every delivery verifies. Deliveries claimed by a killed process are retaken when their lease
// ends: the shortest lease allowed (JOB_LEASE_SECONDS=15) keeps the wait short.

const ROUNDS = 2;
const CLIENTS = 12;
const ACKS_BEFORE_KILL = 60;
const CUSTOMERS = 6;
const BUYERS = 3;
/** A killed process's claims are due again when their lease ends (15 s here); the drain ends soon after. */
const LEASE_SECONDS = 15;
const DRAIN_MS = 45_000;

describe(`webhooks across SIGKILL: every committed change's events arrive (${testEngine})`, () => {
  const servers = new Servers();
  const receiver = { current: null as WebhookReceiver | null };
  let database: TestDatabaseUrl;
  let tenant: Tenant;
  let token = '';
  let productId = 0;
  const buyers: number[] = [];
  let store: Db;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    tenant = await seedTenant(database.url, 'Webhook crash shop', async (services, t) => {
      const type = await services.activityTypes.create(t.accountId, { name: 'Order' });
      await services.earningRules.create(t.accountId, [
        fixedRule('Bonus', 3, type.token),
        variableRule('Spend', 1, 1, type.token),
      ]);
      token = type.token;
      const [product] = (await services.pointsProducts.create(t.accountId, [
        { exchange_type: 'fixed', points_price: 10, reward: { name: '$1 off' } },
      ])) as { id: number }[];
      productId = product!.id;
      for (let i = 0; i < BUYERS; i++) {
        const { id } = await services.customers.create(t.accountId, { email: `buyer${i}@example.com` });
        await services.pointsTransactions.adjust(t.accountId, { customer_id: id, points_change: 1_000_000 });
        buyers.push(id);
      }
    });
    receiver.current = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await store?.close();
    await servers.killAll();
    await receiver.current?.close();
    await database?.drop();
  });

  it(`delivers every event at least once across ${ROUNDS} kills, and nothing else`, { timeout: 180_000 }, async () => {
    const hooks = receiver.current!;
    // A short, varying wait before each answer: some deliveries are in flight at each kill (sent,
    // their answer not yet recorded), the case that may arrive twice.
    hooks.answer = () => ({ status: 200, delayMs: Math.floor(Math.random() * 30) });
    const env = {
      DATABASE_URL: database.url,
      RATE_LIMIT_PER_SECOND: '0',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1',
      JOB_LEASE_SECONDS: String(LEASE_SECONDS),
    };
    let server: ServerProcess = await servers.start(env);
    store = openStore(database.url);
    await createEndpoint(server.url, tenant.apiKey, hooks, ['*']);
    // Events before this one (the seeding's) were written before the endpoint existed.
    const baseline = await lastEventId(store.kysely);

    const ackedActivities = new Set<number>();
    const ackedPurchases = new Set<number>();
    const acked = () => ackedActivities.size + ackedPurchases.size;

    const client = async (target: ServerProcess, name: string, index: number, agent: http.Agent) => {
      for (let n = 0; ; n++) {
        const purchase = index % 3 === 2;
        try {
          const reply = purchase
            ? await sendJson(
                target.url,
                'POST',
                `/v1/points_products/${productId}/purchase`,
                tenant.apiKey,
                { customer_id: buyers[(index + n) % BUYERS] },
                { agent, timeoutMs: 10_000 },
              )
            : await sendJson(
                target.url,
                'POST',
                '/v1/activities',
                tenant.apiKey,
                {
                  activity: {
                    token,
                    customer_email: `c${n % CUSTOMERS}@example.com`,
                    distinct_id: `${name}-${n}`,
                    properties: { amount: 1 + ((n * 7) % 50) },
                  },
                },
                { agent, timeoutMs: 10_000 },
              );
          if (reply.status === 503) continue;
          if (reply.status !== 201) throw new Error(`refused before the crash: ${reply.status} ${reply.body}`);
          if (purchase) ackedPurchases.add(reply.json.points_purchase.id);
          else ackedActivities.add(reply.json.activity.id);
        } catch (error) {
          if (!(error instanceof NoResponse)) throw error;
          return; // the server is gone
        }
      }
    };

    for (let round = 0; round < ROUNDS; round++) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
      const target = acked() + ACKS_BEFORE_KILL;
      const clients = Array.from({ length: CLIENTS }, (_, i) => client(server, `r${round}c${i}`, i, agent));
      while (acked() < target) await new Promise((resolve) => setTimeout(resolve, 5));
      server.child.kill('SIGKILL');
      await Promise.all(clients);
      agent.destroy();
      expect(await exitWithin(server, 10_000)).toBeNull();
      server = await servers.start(env);
    }
    const restarted = performance.now();

    // Drained: every event of the account since the endpoint was made has arrived, and no
    // delivery is left to do (none due, retrying or claimed).
    let expected = new Map<string, { id: number; type: string }>();
    const drained = await eventually(
      async () => {
        expected = await eventIdsAfter(store.kysely, tenant.accountId, baseline);
        const counts = hooks.counts();
        return [...expected.keys()].every((id) => counts.has(id)) && (await pendingDeliveries(store.kysely)) === 0;
      },
      DRAIN_MS,
      250,
    );
    const drainMs = Math.round(performance.now() - restarted);
    const counts = hooks.counts();
    const missing = [...expected].filter(([id]) => !counts.has(id)).map(([id, e]) => `${id} ${e.type}`);
    expect(missing, `not delivered within ${DRAIN_MS} ms of the last restart`).toEqual([]);
    expect(drained, `deliveries still pending ${DRAIN_MS} ms after the last restart`).toBe(true);

    // Nothing arrived that the database does not hold: a rolled-back change sent nothing.
    const unknown = hooks.events().filter((event) => expected.get(event.id)?.type !== event.type);
    expect(unknown.map((e) => `${e.id} ${e.type} account ${e.account_id}`)).toEqual([]);

    // Every acknowledged change has its event.
    const received = hooks.events();
    const activityEvents = new Set(
      received.filter((e) => e.type === 'activity.created').map((e) => e.data.activity?.id as number),
    );
    const purchaseEvents = new Set(
      received.filter((e) => e.type === 'points_purchase.created').map((e) => e.data.points_purchase?.id as number),
    );
    expect([...ackedActivities].filter((id) => !activityEvents.has(id))).toEqual([]);
    expect([...ackedPurchases].filter((id) => !purchaseEvents.has(id))).toEqual([]);

    expect(hooks.unverified()).toEqual([]);

    // The delivery log holds a success for each of them (a delivery sent but not recorded by a
    // killed process is sent again, and recorded then).
    const succeeded = await store.kysely
      .selectFrom('webhook_attempts')
      .select('event_id')
      .distinct()
      .where('account_id', '=', tenant.accountId)
      .where('status_code', '>=', 200)
      .where('status_code', '<', 300)
      .execute();
    const logged = new Set(succeeded.map((row) => Number(row.event_id)));
    expect([...expected].filter(([, e]) => !logged.has(e.id)).map(([id]) => id)).toEqual([]);

    const twice = [...counts.values()].filter((n) => n > 1).length;
    console.log(
      `webhooks crash (${testEngine}): ${ROUNDS} kills, ${ackedActivities.size} activities and ` +
        `${ackedPurchases.size} purchases acknowledged, ${expected.size} events, ${hooks.deliveries.length} ` +
        `deliveries (${twice} events more than once), drained ${drainMs} ms after the last restart`,
    );
  });
});
