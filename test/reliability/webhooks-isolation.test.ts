import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestApp, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { fixedRule } from '../helpers/engine.js';
import {
  createEndpoint,
  type DeliveredEvent,
  eventIdsAfter,
  lastEventId,
  pendingDeliveries,
  WebhookReceiver,
} from '../helpers/receiver.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';
import { authorize, exchange, PASSWORD, REDIRECT_URI } from '../oauth/helpers.js';
import { openStore, Servers, sendJson } from './support.js';

// Whose events go where (events-contract.md, "Webhook endpoints"): accounts A and B, each with an
// endpoint and a receiver of its own, on one real server process: neither ever gets the other's
// events. An app's endpoint, made with an access token whose grant reads customers only, gets the
// customer.* events and nothing its grant cannot read; once the merchant revokes the grant the
// endpoint is gone and gets nothing more. The grant is made by the real authorization-code flow,
// run in this process on the server's database (the server process shares it).

const ACTIVITIES = 8;
const DRAIN_MS = 30_000;

interface Shop {
  tenant: Tenant;
  /** The token of its activity type. */
  activityToken: string;
  receiver: WebhookReceiver;
}

describe(`webhook isolation between accounts and app grants (${testEngine})`, () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let server: ServerProcess;
  let store: Db;
  const shops: Shop[] = [];
  let sent = 0;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    for (const name of ['Shop A', 'Shop B']) {
      let activityToken = '';
      const tenant = await seedTenant(database.url, name, async (services, t) => {
        const type = await services.activityTypes.create(t.accountId, { name: 'Order' });
        await services.earningRules.create(t.accountId, [fixedRule('Bonus', 5, type.token)]);
        activityToken = type.token;
      });
      shops.push({ tenant, activityToken, receiver: await WebhookReceiver.start() });
    }
    server = await servers.start({
      DATABASE_URL: database.url,
      RATE_LIMIT_PER_SECOND: '0',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1',
    });
    store = openStore(database.url);
    for (const shop of shops) await createEndpoint(server.url, shop.tenant.apiKey, shop.receiver, ['*']);
  });
  afterAll(async () => {
    await store?.close();
    await servers.killAll();
    for (const shop of shops) await shop.receiver.close();
    await database?.drop();
  });

  /** `count` activities of new customers of `shop` (customer.created, activity.created, points_transaction.created). */
  async function activities(shop: Shop, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const n = sent++;
      const reply = await sendJson(server.url, 'POST', '/v1/activities', shop.tenant.apiKey, {
        activity: { token: shop.activityToken, customer_email: `member${n}@example.com`, distinct_id: `order-${n}` },
      });
      expect(reply.status, reply.body).toBe(201);
    }
  }

  /** Waits until every receiver has every event of its account after `baselines`, and nothing is pending. */
  async function drained(baseline: number): Promise<Map<string, { id: number; type: string }>[]> {
    let expected: Map<string, { id: number; type: string }>[] = [];
    const done = await eventually(
      async () => {
        expected = await Promise.all(shops.map((shop) => eventIdsAfter(store.kysely, shop.tenant.accountId, baseline)));
        const arrived = shops.every((shop, i) => {
          const counts = shop.receiver.counts();
          return [...expected[i]!.keys()].every((id) => counts.has(id));
        });
        return arrived && (await pendingDeliveries(store.kysely)) === 0;
      },
      DRAIN_MS,
      100,
    );
    expect(done, `deliveries not done within ${DRAIN_MS} ms`).toBe(true);
    return expected;
  }

  it("account A's endpoint never receives B's events, nor B's A's", async () => {
    const started = performance.now();
    const baseline = await lastEventId(store.kysely);
    const [a, b] = shops as [Shop, Shop];
    for (let round = 0; round < ACTIVITIES; round++) {
      await activities(a, 1);
      await activities(b, 1);
    }
    const [expectedA, expectedB] = await drained(baseline);
    expect(expectedA!.size).toBeGreaterThanOrEqual(ACTIVITIES * 2);
    expect(expectedB!.size).toBeGreaterThanOrEqual(ACTIVITIES * 2);

    for (const [shop, own, other] of [
      [a, expectedA!, expectedB!],
      [b, expectedB!, expectedA!],
    ] as const) {
      const received = shop.receiver.events();
      expect(received.filter((e) => e.account_id !== shop.tenant.accountId).map(describeEvent)).toEqual([]);
      expect(received.filter((e) => other.has(e.id)).map(describeEvent)).toEqual([]);
      expect(new Set(received.map((e) => e.id))).toEqual(new Set(own.keys()));
      expect(shop.receiver.unverified()).toEqual([]);
    }
    console.log(`webhooks isolation between accounts (${testEngine}): ${Math.round(performance.now() - started)} ms`);
  });

  it("an app's endpoint receives only what its grant can read, and is gone once the grant is revoked", {
    timeout: 60_000,
  }, async () => {
    const started = performance.now();
    const [a, b] = shops as [Shop, Shop];
    const appReceiver = await WebhookReceiver.start();
    // The merchant of A connects an app, approving customer:read and webhook_endpoint:write only,
    // through the authorization-code flow of an app built in this process on the same database.
    const config = loadConfig({ DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0', LOG_LEVEL: 'silent' });
    const db = openStore(database.url);
    let app: FastifyInstance | null = null;
    try {
      app = await buildApp({ config, db, clock: systemClock, logger: false });
      await app.ready();
      const email = `owner-${a.tenant.accountId}@shop-a.example`;
      await app.services.users.create(a.tenant.accountId, { email, password: PASSWORD });
      const registered = await app.services.apps.create({ name: 'CRM sync', redirectUris: [REDIRECT_URI] });
      const fixture = {
        accountId: a.tenant.accountId,
        email,
        password: PASSWORD,
        clientId: registered.client_id,
        clientSecret: registered.client_secret,
      };
      const t = { app, services: app.services } as unknown as TestApp;
      const { code } = await authorize(t, fixture, { scope: 'customer:read webhook_endpoint:write' });
      const tokens = await exchange(t, fixture, code);
      expect(tokens.statusCode, tokens.body).toBe(200);
      const accessToken = tokens.json<{ access_token: string }>().access_token;
      const grant = await store.kysely
        .selectFrom('oauth_grants')
        .select(['id', 'scopes'])
        .where('account_id', '=', a.tenant.accountId)
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow();
      expect(grant.scopes).toBe('customer:read webhook_endpoint:write');

      // Subscribed to everything, it still gets only what the grant can read.
      const endpoint = await createEndpoint(server.url, accessToken, appReceiver, ['*']);

      let baseline = await lastEventId(store.kysely);
      for (let round = 0; round < ACTIVITIES; round++) {
        await activities(a, 1);
        await activities(b, 1);
      }
      const [expectedA] = await drained(baseline);
      await eventually(async () => {
        const counts = appReceiver.counts();
        return [...expectedA!].filter(([, e]) => e.type.startsWith('customer.')).every(([id]) => counts.has(id));
      }, 5000);
      const types = new Set([...expectedA!.values()].map((e) => e.type));
      // The test can fail: A's changes made events the grant cannot read.
      expect(types).toContain('points_transaction.created');
      expect(types).toContain('customer.created');
      const readable = [...expectedA!].filter(([, e]) => e.type.startsWith('customer.')).map(([id]) => id);
      expect(readable.length).toBeGreaterThanOrEqual(ACTIVITIES);
      const received = appReceiver.events();
      expect(received.filter((e) => !e.type.startsWith('customer.')).map(describeEvent)).toEqual([]);
      expect(received.filter((e) => e.account_id !== a.tenant.accountId).map(describeEvent)).toEqual([]);
      expect(new Set(received.map((e) => e.id))).toEqual(new Set(readable));
      expect(appReceiver.unverified()).toEqual([]);

      // The merchant disconnects the app (as the console's "Disconnect" does): its endpoint goes.
      await app.services.oauth.revokeGrant(a.tenant.accountId, grant.id);
      const gone = await sendJson(server.url, 'GET', `/v1/webhook_endpoints/${endpoint.id}`, a.tenant.apiKey);
      expect(gone.status, gone.body).toBe(404);
      expect(gone.json.error.code).toBe('not_found');
      const before = appReceiver.deliveries.length;
      baseline = await lastEventId(store.kysely);
      await activities(a, ACTIVITIES);
      const [after] = await drained(baseline);
      expect(after!.size).toBeGreaterThanOrEqual(ACTIVITIES);
      // Nor will any: drained() waited until no delivery job was left, and a retry of an earlier
      // attempt is that job, scheduled again (src/webhooks/delivery.ts), not a timer of its own.
      expect(appReceiver.deliveries.slice(before).map((d) => d.webhookId)).toEqual([]);
      // A's own endpoint got them: the app's going took nothing else with it.
      const counts = a.receiver.counts();
      expect([...after!.keys()].filter((id) => !counts.has(id))).toEqual([]);
    } finally {
      await app?.close();
      await db.close();
      await appReceiver.close();
    }
    console.log(`webhooks isolation of an app's grant (${testEngine}): ${Math.round(performance.now() - started)} ms`);
  });
});

function describeEvent(event: DeliveredEvent): string {
  return `${event.id} ${event.type} account ${event.account_id}`;
}
