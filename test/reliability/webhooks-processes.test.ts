import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import {
  createEndpoint,
  eventIdsAfter,
  lastEventId,
  pendingDeliveries,
  processAndChildren,
  WebhookReceiver,
} from '../helpers/receiver.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { eventually, sleep } from '../helpers/wait.js';
import { burst, CREATE_OR_UPDATE, openStore, Servers, sendJson, tally } from './support.js';

// Every server process delivers, and they share the work without two of them ever making one
// attempt (events-contract.md, "Deliveries"): on PostgreSQL two server processes on one database,
// on SQLite one server of WORKERS=2 (two processes on one file). A few hundred events written
// through both, each delivered exactly once (no process dies here, so no delivery may repeat) and
// logged with exactly one attempt. Then the latency the contract promises: on an idle service the
// receiver has each event within 1 s of its write's answer.

const CUSTOMERS = 300;
const SEQUENTIAL = 20;
const DRAIN_MS = 30_000;

describe(`webhook deliveries shared by processes (${testEngine}): ${
  testEngine === 'postgres' ? 'two server processes on one database' : 'one server of WORKERS=2'
}`, () => {
  const servers = new Servers();
  const receiver = { current: null as WebhookReceiver | null };
  let database: TestDatabaseUrl;
  let tenant: Tenant;
  let targets: ServerProcess[] = [];
  let store: Db;
  let endpointId = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    tenant = await seedTenant(database.url, 'Webhook processes shop');
    receiver.current = await WebhookReceiver.start();
    const env = {
      DATABASE_URL: database.url,
      RATE_LIMIT_PER_SECOND: '0',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1',
    };
    targets =
      testEngine === 'postgres'
        ? await Promise.all([servers.start(env), servers.start(env)])
        : [await servers.start({ ...env, WORKERS: '2' })];
    store = openStore(database.url);
    endpointId = (await createEndpoint(targets[0]!.url, tenant.apiKey, receiver.current, ['*'])).id;
  });
  afterAll(async () => {
    agent.destroy();
    await store?.close();
    await servers.killAll();
    await receiver.current?.close();
    await database?.drop();
  });

  it(`delivers each of the events of ${CUSTOMERS} new customers exactly once, one attempt each`, {
    timeout: 90_000,
  }, async () => {
    const hooks = receiver.current!;
    // The processes that deliver: the two servers, or the two workers of the one (not its primary).
    let senders: number[] = [];
    const found = await eventually(async () => {
      senders =
        testEngine === 'postgres'
          ? targets.map((target) => target.child.pid!)
          : processAndChildren(targets[0]!.child.pid!).slice(1);
      return senders.length === 2;
    }, 10_000);
    expect(found, `delivering processes: ${senders.join(', ')}`).toBe(true);
    hooks.senders = senders;
    // Both processes deliver before the burst: a worker still starting on a busy machine would
    // leave the other all of it, and "never two at once" would then say nothing. Test events
    // (each delivered by the process that answered it) until each process has sent one; then
    // they and their log are put aside, so that what follows counts the burst's alone.
    let warmed = 0;
    const bothDeliver = await eventually(
      async () => {
        const target = targets[warmed++ % targets.length]!;
        await sendJson(target.url, 'POST', `/v1/webhook_endpoints/${endpointId}/test`, tenant.apiKey, undefined, {
          agent: false,
        });
        const by = new Set(hooks.deliveries.map((d) => d.pid));
        return senders.every((pid) => by.has(pid));
      },
      30_000,
      50,
    );
    expect(
      bothDeliver,
      `deliveries by process: ${JSON.stringify(tally(hooks.deliveries, (d) => d.pid ?? 'unknown'))}`,
    ).toBe(true);
    expect(await eventually(async () => (await pendingDeliveries(store.kysely)) === 0, 10_000)).toBe(true);
    hooks.deliveries.splice(0);
    await store.kysely.deleteFrom('webhook_attempts').where('account_id', '=', tenant.accountId).execute();
    // An endpoint that takes its time (20 ms an answer), so that a backlog builds and the
    // processes share its places: a quick one is kept up with by whichever process claims first.
    hooks.answer = () => ({ status: 200, delayMs: 20 });
    const baseline = await lastEventId(store.kysely);
    const started = performance.now();
    const replies = await burst(
      targets,
      CUSTOMERS,
      // create_or_update takes an app's access token only.
      tenant.accessToken,
      (i) => ({
        path: CREATE_OR_UPDATE,
        body: { customer_identity: { distinct_id: `crm-${i}`, email: `member${i}@example.com` } },
      }),
      { agent },
    );
    expect(tally(replies, (r) => r.status)).toEqual({ 201: CUSTOMERS });

    let expected = new Map<string, { id: number; type: string }>();
    const drained = await eventually(
      async () => {
        expected = await eventIdsAfter(store.kysely, tenant.accountId, baseline);
        const counts = hooks.counts();
        return [...expected.keys()].every((id) => counts.has(id)) && (await pendingDeliveries(store.kysely)) === 0;
      },
      DRAIN_MS,
      100,
    );
    const drainMs = Math.round(performance.now() - started);
    const counts = hooks.counts();
    expect([...expected.keys()].filter((id) => !counts.has(id))).toEqual([]);
    expect(drained).toBe(true);
    // At least one event per new customer (customer.created).
    expect(expected.size).toBeGreaterThanOrEqual(CUSTOMERS);
    const customerCreated = hooks.events().filter((e) => e.type === 'customer.created');
    expect(new Set(customerCreated.map((e) => e.data.customer?.id)).size).toBe(CUSTOMERS);

    // Exactly once: nothing died, so nothing may arrive twice, nor anything unknown.
    expect([...counts].filter(([, n]) => n !== 1)).toEqual([]);
    expect([...counts.keys()].filter((id) => !expected.has(id))).toEqual([]);
    expect(hooks.unverified()).toEqual([]);
    expect(hooks.rejectsChangedBody(hooks.deliveries[0]!)).toBe(true);

    // The log: one attempt per (event, endpoint), and it succeeded. Two processes making one
    // attempt would log two.
    const attempts = await store.kysely
      .selectFrom('webhook_attempts')
      .select(['event_id', 'webhook_endpoint_id', 'status_code', 'attempt'])
      .where('account_id', '=', tenant.accountId)
      .execute();
    const perEvent = tally(attempts, (a) => `${a.event_id}/${a.webhook_endpoint_id}`);
    expect(Object.values(perEvent).filter((n) => n !== 1)).toEqual([]);
    expect(Object.keys(perEvent).length).toBe(expected.size);
    expect(attempts.filter((a) => Number(a.webhook_endpoint_id) !== endpointId)).toEqual([]);
    expect(attempts.filter((a) => a.status_code === null || a.status_code < 200 || a.status_code >= 300)).toEqual([]);

    // Both processes delivered (else "never two at once" would say nothing): each connection
    // that brought a delivery is traced to the process at its other end.
    const byProcess = tally(hooks.deliveries, (d) => d.pid ?? 'unknown');
    // (Traced through /proc, so on Linux only.)
    if (process.platform === 'linux') expect(Object.keys(byProcess).sort()).toEqual(senders.map(String).sort());

    console.log(
      `webhooks processes (${testEngine}): ${expected.size} events of ${CUSTOMERS} customers delivered, ` +
        `written and drained in ${drainMs} ms; deliveries by process ${JSON.stringify(byProcess)}`,
    );
  });

  it(`on an idle service, each of ${SEQUENTIAL} writes' events arrives within 1 s of its answer`, {
    timeout: 60_000,
  }, async () => {
    const hooks = receiver.current!;
    // Idle: nothing pending, and the runners back to waiting for a wake-up.
    expect(await eventually(async () => (await pendingDeliveries(store.kysely)) === 0, 10_000)).toBe(true);
    await sleep(1000);
    const latencies: number[] = [];
    for (let i = 0; i < SEQUENTIAL; i++) {
      const target = targets[i % targets.length]!;
      const reply = await sendJson(
        target.url,
        'POST',
        CREATE_OR_UPDATE,
        tenant.accessToken,
        { customer_identity: { distinct_id: `idle-${i}`, email: `idle${i}@example.com` } },
        { agent },
      );
      const answered = performance.now();
      expect(reply.status, reply.body).toBe(201);
      const customerId = reply.json.customer_identity.customer_id as number;
      const arrival = () =>
        hooks.deliveries.find((d) => d.event?.type === 'customer.created' && d.event.data.customer?.id === customerId);
      const arrived = await eventually(async () => arrival() !== undefined, 5000, 5);
      expect(arrived, `customer ${customerId}'s customer.created never arrived`).toBe(true);
      // It may arrive before the answer does (the commit wakes the runner at once).
      latencies.push(Math.max(0, arrival()!.at - answered));
      await sleep(200);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const p99 = sorted[Math.ceil(0.99 * sorted.length) - 1]!;
    const p50 = sorted[Math.ceil(0.5 * sorted.length) - 1]!;
    console.log(
      `webhooks latency (${testEngine}): ${SEQUENTIAL} writes, p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, ` +
        `max ${sorted.at(-1)!.toFixed(1)} ms`,
    );
    expect(latencies.filter((ms) => ms >= 1000)).toEqual([]);
  });
});
