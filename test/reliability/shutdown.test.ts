import http from 'node:http';
import net from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { seedTenant } from '../helpers/seed.js';
import { eventually, sleep } from '../helpers/wait.js';
import {
  CREATE_OR_UPDATE,
  checkContractError,
  exitWithin,
  NoResponse,
  openStore,
  parseRawReplies,
  type Reply,
  Servers,
  sendJson,
  tally,
} from './support.js';

// SIGTERM a real server process with requests in flight: they complete; new connections are
// refused and a new request on a kept-alive connection gets 503 unavailable; the process
// exits 0 within its 10-second grace period.

const PARALLEL = 50;

/** True when a new TCP connection to the port is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

describe(`graceful shutdown on SIGTERM (${testEngine})`, () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let tenant: Tenant;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    tenant = await seedTenant(database.url, 'Shutdown shop');
  });
  afterAll(async () => {
    await servers.killAll();
    await database?.drop();
  });

  it('finishes requests in flight, refuses new ones, and exits 0 within 10 s', async () => {
    const server = await servers.start({ DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' });

    // A slow client: headers and half its body sent before the signal, the rest after it, with
    // a second request pipelined behind it on the same connection.
    const slowBody = JSON.stringify({ customer_identity: { distinct_id: 'slow', email: 'slow@example.com' } });
    const slow = net.connect(server.port, '127.0.0.1');
    let slowData = '';
    slow.on('data', (chunk) => {
      slowData += chunk.toString();
    });
    const slowClosed = new Promise<void>((resolve) => slow.on('close', () => resolve()));
    slow.on('error', () => {});
    await new Promise<void>((resolve) => slow.on('connect', () => resolve()));
    slow.write(
      `POST ${CREATE_OR_UPDATE} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${tenant.accessToken}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${slowBody.length}\r\n\r\n${slowBody.slice(0, 20)}`,
    );
    // The server has read the headers, so the request is in flight: Fastify logs it as it routes it.
    const inFlight = () => server.output().includes(`"url":"${CREATE_OR_UPDATE}"`);
    expect(await eventually(async () => inFlight(), 10_000, 10), server.output()).toBe(true);

    // Many parallel writes; the signal goes as soon as the first one is answered.
    const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL });
    let signalled = 0;
    const results = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) =>
        sendJson(
          server.url,
          'POST',
          CREATE_OR_UPDATE,
          tenant.accessToken,
          { customer_identity: { distinct_id: `parallel-${i}`, email: `p${i}@example.com` } },
          { agent, timeoutMs: 15_000 },
        )
          .then((reply) => {
            if (signalled === 0) {
              signalled = Date.now();
              server.child.kill('SIGTERM');
            }
            return { i, reply, error: null };
          })
          .catch((error: unknown) => ({ i, reply: null as Reply | null, error })),
      ),
    );
    agent.destroy();

    // The listener is closed at once: new connections are refused while the slow request runs.
    expect(await eventually(() => refused(server.port), 3000, 50)).toBe(true);
    expect(server.child.exitCode).toBeNull();

    // The slow request completes; the request behind it is refused with the contract's 503.
    slow.write(slowBody.slice(20));
    slow.write(`GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    await Promise.race([slowClosed, sleep(10_000)]);
    const slowReplies = parseRawReplies(slowData);
    expect(slowReplies[0]?.status, slowData).toBe(201);
    expect(slowReplies, slowData).toHaveLength(2);
    expect(checkContractError(slowReplies[1]!, 'pipelined after SIGTERM')).toBe('unavailable');
    expect(slowReplies[1]!.headers.connection).toBe('close');

    // Every parallel request got a complete answer: done (2xx) or refused in the contract's shape.
    const dropped = results.filter((r) => r.error !== null);
    expect(dropped.map((r) => `${r.i}: ${(r.error as Error).message}`)).toEqual([]);
    expect(dropped.every((r) => r.error instanceof NoResponse)).toBe(true);
    const answered = results.map((r) => r.reply!);
    for (const reply of answered.filter((r) => r.status >= 400)) expect(checkContractError(reply)).toBe('unavailable');
    expect(answered.every((r) => [200, 201, 503].includes(r.status))).toBe(true);

    const code = await exitWithin(server, 10_000 - (Date.now() - signalled));
    expect(code).toBe(0);
    expect(server.output()).toMatch(/"msg":"stopped"/);

    // What was acknowledged is stored; what was refused is not.
    const store = openStore(database.url);
    try {
      const { rows } = await sql<{ distinct_id: string }>`select distinct_id from customer_identities`.execute(
        store.kysely,
      );
      const stored = new Set(rows.map((r) => r.distinct_id));
      expect(stored.has('slow')).toBe(true);
      results.forEach(({ i, reply }) => {
        expect(stored.has(`parallel-${i}`), `parallel-${i}: ${reply!.status}`).toBe(reply!.status === 201);
      });
    } finally {
      await store.close();
    }
    console.log(
      `shutdown (${testEngine}): ${PARALLEL} parallel requests ${JSON.stringify(tally(answered, (r) => r.status))}, ` +
        `slow request ${slowReplies.map((r) => r.status).join(' then ')}`,
    );
  });
});
