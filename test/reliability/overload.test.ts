import http from 'node:http';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/app.js';
import { seedTenant } from '../helpers/seed.js';
import { eventually, sleep } from '../helpers/wait.js';
import {
  CREATE_OR_UPDATE,
  checkContractError,
  openStore,
  type Reply,
  send,
  sendJson,
  serverOnNewDatabase,
  tally,
} from './support.js';

// A real server process started with a low MAX_EVENT_LOOP_DELAY_MS, saturated with large but
// valid writes: it must shed load with 503 unavailable and Retry-After rather than let callers
// time out, never answer 500, keep its liveness and metrics answering, store exactly what it
// acknowledged, and recover by itself.

const MAX_DELAY_MS = 30;
const CLIENTS = 200;
/** Longest the load runs when no 503 comes; after the first 503 it runs one second more. */
const MAX_LOAD_MS = 15_000;

/**
 * A valid identity just under the 16 KiB properties bound, in 1,200 small keys: parsing,
 * checking, merging, storing and serialising it all cost CPU in the server's event loop.
 */
function largeIdentity(distinctId: string): object {
  const properties: Record<string, number> = {};
  for (let i = 0; i < 1200; i++) properties[`k${i}`] = i;
  return { customer_identity: { distinct_id: distinctId, email: `${distinctId}@example.com`, properties } };
}

describe(`overload: event-loop saturation (${testEngine})`, () => {
  const fixture = serverOnNewDatabase(
    (url) =>
      seedTenant(url, 'Busy shop', async (services, t) => {
        // A full page of 250 rules: each list answer is ~100 KB of JSON to serialise.
        const rule = {
          image_url: 'https://cdn.example/rule.png',
          action_text: 'Do the thing',
          action_url: 'https://shop.example/thing',
          restricted_to_vip_tier_ids: [1, 2, 3],
          reward: { type: 'points' },
          reward_value: { type: 'variable', variable: { value: 5, per_amount: 1 } },
          earning_limit: { max: 3, type: 'rolling', rolling: { unit: 'week', unit_count: 2 } },
        };
        await services.earningRules.create(
          t.accountId,
          Array.from({ length: 250 }, (_, i) => ({ ...rule, name: `Rule ${i}` })),
        );
      }),
    { MAX_EVENT_LOOP_DELAY_MS: String(MAX_DELAY_MS) },
  );

  it('sheds load with 503 unavailable and Retry-After, never a 500 or a timeout, and recovers', async () => {
    const { server, seeded: tenant, database } = fixture;
    const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
    const writes: { id: string; reply: Reply }[] = [];
    const reads: Reply[] = [];
    const probes: Reply[] = [];
    const started = Date.now();
    let firstShed = 0;
    const loading = () => Date.now() - started < MAX_LOAD_MS && (firstShed === 0 || Date.now() - firstShed < 1000);
    const seen = (reply: Reply) => {
      if (reply.status === 503 && firstShed === 0) firstShed = Date.now();
      return reply;
    };
    // No answer within 30 s counts as a timeout and fails the test (send rejects).
    const worker = async (c: number) => {
      for (let n = 0; loading(); n++) {
        if ((c + n) % 2 === 0) {
          const id = `c${c}-${n}`;
          const body = largeIdentity(id);
          const reply = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, tenant.accessToken, body, {
            agent,
            timeoutMs: 30_000,
          });
          writes.push({ id, reply: seen(reply) });
        } else {
          const reply = await send(server.url, {
            path: '/v1/earning_rules?limit=250',
            headers: { authorization: `Bearer ${tenant.apiKey}` },
            agent,
            timeoutMs: 30_000,
          });
          reads.push(seen(reply));
        }
      }
    };
    // Meanwhile, liveness and metrics, as a load balancer and a scraper would ask.
    const watcher = async () => {
      const pending: Promise<number>[] = [];
      for (let i = 0; loading(); i++) {
        const path = i % 2 ? '/metrics' : '/healthz';
        pending.push(send(server.url, { path, timeoutMs: 30_000 }).then((reply) => probes.push(reply)));
        await sleep(100);
      }
      await Promise.all(pending);
    };
    // Beside them, autocannon asks for the OpenAPI document (20 KB, no database) as fast as it
    // can: the writes alone do not keep the event loop busy when the database is the slower part
    // (PostgreSQL, with the rest of the suite sharing the two cores).
    let stopBackground = () => {};
    const background = new Promise<autocannon.Result>((resolve, reject) => {
      const instance = autocannon(
        { url: `${server.url}/v1/openapi.json`, connections: 50, pipelining: 4, duration: MAX_LOAD_MS / 1000 + 5 },
        (error, result) => (error ? reject(error) : resolve(result)),
      );
      stopBackground = () => instance.stop();
    });
    try {
      await Promise.all([...Array.from({ length: CLIENTS }, (_, c) => worker(c)), watcher()]);
    } finally {
      stopBackground();
      agent.destroy();
    }
    const documents = await background;
    const refused = [...writes.map((w) => w.reply), ...reads].filter((r) => r.status === 503);
    for (const reply of refused) expect(checkContractError(reply, 'overloaded')).toBe('unavailable');

    const statuses = tally(writes, (w) => w.reply.status);
    const readStatuses = tally(reads, (r) => r.status);
    console.log(
      `overload (${testEngine}): ${((Date.now() - started) / 1000).toFixed(1)} s of load from ${CLIENTS} clients: ` +
        `writes ${JSON.stringify(statuses)}, reads ${JSON.stringify(readStatuses)}, ` +
        `documents ${JSON.stringify(Object.fromEntries(Object.entries(documents.statusCodeStats ?? {}).map(([k, v]) => [k, v.count])))}, ` +
        `liveness and metrics ${JSON.stringify(tally(probes, (r) => r.status))}`,
    );
    expect(Object.keys(statuses).every((s) => ['201', '503'].includes(s))).toBe(true);
    expect(Object.keys(readStatuses).every((s) => ['200', '503'].includes(s))).toBe(true);
    // autocannon's requests too: answered, 200 or 503, none dropped or timed out.
    expect(documents.errors + documents.timeouts).toBe(0);
    expect(Object.keys(documents.statusCodeStats ?? {}).every((s) => ['200', '503'].includes(s))).toBe(true);
    expect(refused.length).toBeGreaterThan(0);
    // Liveness and metrics keep answering while the API sheds load.
    expect(probes.every((r) => r.status === 200)).toBe(true);

    // Exactly what was acknowledged is stored.
    const store = openStore(database.url);
    try {
      const { rows } = await sql<{ distinct_id: string }>`select distinct_id from customer_identities`.execute(
        store.kysely,
      );
      const stored = new Set(rows.map((r) => r.distinct_id));
      const wrong = writes.filter(({ id, reply }) => stored.has(id) !== (reply.status === 201));
      expect(wrong.map(({ id, reply }) => `${id}: ${reply.status}`)).toEqual([]);
    } finally {
      await store.close();
    }

    // Once the burst is over, the service recovers without help.
    const recovered = await eventually(async () => {
      const reply = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, tenant.accessToken, largeIdentity('after'));
      return reply.status === 201 || reply.status === 200;
    }, 15_000);
    expect(recovered).toBe(true);
  });
});
