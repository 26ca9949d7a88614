import type net from 'node:net';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/app.js';
import { seedTenant } from '../helpers/seed.js';
import { eventually } from '../helpers/wait.js';
import {
  CREATE_OR_UPDATE,
  checkContractError,
  parseRawReplies,
  rawExchange,
  rawStatus,
  send,
  sendJson,
  serverOnNewDatabase,
} from './support.js';

// Resource limits of one real server process: body size, slow clients, simultaneous
// connections and repeated failed authentications.

const REQUEST_TIMEOUT_MS = 1000;
const MAX_CONNECTIONS = 5;
const AUTH_FAILURES = 5;

describe(`resource limits of a real server process (${testEngine})`, () => {
  const fixture = serverOnNewDatabase((url) => seedTenant(url, 'Limits shop'), {
    AUTH_FAILURES_PER_MINUTE: '0',
    REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    MAX_CONNECTIONS: String(MAX_CONNECTIONS),
  });

  const headersOf = (length: number | 'chunked', token = fixture.seeded.accessToken) =>
    `POST ${CREATE_OR_UPDATE} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\n${length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`}\r\n\r\n`;

  it('refuses a body over 64 KiB with 413 payload_too_large, declared or chunked, and stays up', async () => {
    const { server, seeded: tenant } = fixture;
    const big = JSON.stringify({ customer_identity: { distinct_id: 'big', email: 'big@example.com' }, pad: 'x' });
    const oversized = big.replace('"x"', JSON.stringify('x'.repeat(64 * 1024)));
    const declared = await send(server.url, {
      method: 'POST',
      path: CREATE_OR_UPDATE,
      headers: { authorization: `Bearer ${tenant.accessToken}`, 'content-type': 'application/json' },
      body: oversized,
    });
    expect(checkContractError(declared, 'declared length')).toBe('payload_too_large');

    // Chunked: no length up front, so the limit must be counted while reading.
    const chunk = 'x'.repeat(16 * 1024);
    const chunked = await rawExchange(
      server.port,
      [
        headersOf('chunked'),
        ...Array.from({ length: 6 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
        '0\r\n\r\n',
      ],
      { waitMs: 5000 },
    );
    expect(rawStatus(chunked.data)).toBe(413);

    // A 10 MB body, from a client that asks to close the connection afterwards: the 413 must
    // arrive every time, not be lost to a reset while the client is still sending.
    for (let i = 0; i < 8; i++) {
      const huge = await send(server.url, {
        method: 'POST',
        path: CREATE_OR_UPDATE,
        headers: { authorization: `Bearer ${tenant.accessToken}`, 'content-type': 'application/json' },
        body: Buffer.alloc(10 * 1024 * 1024, 'x'),
      });
      expect(checkContractError(huge, '10 MB')).toBe('payload_too_large');
    }
    expect((await send(server.url, { path: '/healthz' })).status).toBe(200);
  });

  it(`cuts off a client that sends its headers byte by byte after REQUEST_TIMEOUT_MS (${REQUEST_TIMEOUT_MS} ms)`, async () => {
    const { server } = fixture;
    const request = headersOf(20);
    const result = await rawExchange(server.port, request.split(''), { gapMs: 100, waitMs: 15_000 });
    expect(result.closedByServer).toBe(true);
    // Well before the headers could have arrived (~20 s at this pace); never a request handled.
    expect(result.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 4000);
    // Closed, or answered in the contract's body: invalid_request is 400 (Node alone would say 408).
    expect([null, 400]).toContain(rawStatus(result.data));
    if (rawStatus(result.data) === 400) expect(result.data).toContain('the request was not received in time');
  });

  it('cuts off an authenticated client that sends its body slowly', async () => {
    const { server, seeded: tenant } = fixture;
    const body = JSON.stringify({ customer_identity: { distinct_id: 'slow', email: 'slow@example.com' } });
    const result = await rawExchange(server.port, [headersOf(body.length), ...body.split('')], {
      gapMs: 100,
      waitMs: 15_000,
    });
    expect(result.closedByServer).toBe(true);
    expect(result.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 4000);
    // Closed, or answered in the contract's body: invalid_request is 400 (Node alone would say 408).
    expect([null, 400]).toContain(rawStatus(result.data));
    if (rawStatus(result.data) === 400) expect(result.data).toContain('the request was not received in time');
    // The request never completed, so nothing was stored.
    const after = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, tenant.accessToken, {
      customer_identity: { distinct_id: 'slow', email: 'slow@example.com' },
    });
    expect(after.status).toBe(201);
  });

  it('cuts off a connection that never sends a request', async () => {
    const { server } = fixture;
    const result = await rawExchange(server.port, [], { waitMs: 15_000 });
    expect(result.closedByServer).toBe(true);
    expect(result.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 4000);
  });

  it(`closes connection ${MAX_CONNECTIONS + 1} at once while ${MAX_CONNECTIONS} are open, and the ${MAX_CONNECTIONS} keep working`, async () => {
    const { server } = fixture;
    const open: net.Socket[] = [];
    const ask = (socket: net.Socket) =>
      new Promise<number | null>((resolve) => {
        let data = '';
        const onData = (chunk: Buffer) => {
          data += chunk.toString();
          const replies = parseRawReplies(data);
          if (replies.length > 0) {
            socket.off('data', onData);
            resolve(replies[0]!.status);
          }
        };
        socket.on('data', onData);
        socket.once('close', () => resolve(null));
        socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      });
    const connectOne = () =>
      new Promise<net.Socket>((resolve, reject) => {
        const socket = connect(server.port, '127.0.0.1', () => resolve(socket));
        socket.on('error', reject);
      });
    try {
      for (let i = 0; i < MAX_CONNECTIONS; i++) {
        const socket = await connectOne();
        open.push(socket);
        expect(await ask(socket)).toBe(200);
      }
      // The next one is accepted by the kernel, then closed by the server without an answer.
      const extra = await rawExchange(server.port, ['GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'], {
        waitMs: 5000,
      });
      expect(extra.closedByServer).toBe(true);
      expect(extra.data).toBe('');
      for (const socket of open) expect(await ask(socket)).toBe(200);
      // A slot freed is a slot usable again.
      open.pop()!.destroy();
      expect(
        await eventually(
          async () => (await send(server.url, { path: '/healthz', timeoutMs: 2000 })).status === 200,
          5000,
        ),
      ).toBe(true);
    } finally {
      for (const socket of open) socket.destroy();
    }
  });
});

describe(`failed authentications from one address (${testEngine})`, () => {
  const fixture = serverOnNewDatabase((url) => seedTenant(url, 'Guessed shop'), {
    AUTH_FAILURES_PER_MINUTE: String(AUTH_FAILURES),
  });

  it(`answers failures 429 rate_limited after ${AUTH_FAILURES} in a minute, and still serves good credentials`, async () => {
    const { server, seeded: tenant } = fixture;
    const guesses = [];
    for (let i = 0; i < AUTH_FAILURES; i++) {
      guesses.push(await sendJson(server.url, 'GET', '/v1/earning_rules', `api_${String(i).repeat(40)}`));
    }
    expect(guesses.map((r) => checkContractError(r))).toEqual(Array(AUTH_FAILURES).fill('unauthorized'));
    for (const token of ['api_nope', `api_${'0'.repeat(40)}`, `api_${'9'.repeat(40)}`]) {
      const blocked = await sendJson(server.url, 'GET', '/v1/earning_rules', token);
      expect(checkContractError(blocked, token.slice(0, 4))).toBe('rate_limited');
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    }
    // A valid credential proves the caller is not guessing: it is served as from any address.
    for (const token of [tenant.apiKey, tenant.accessToken]) {
      expect((await sendJson(server.url, 'GET', '/v1/earning_rules', token)).status).toBe(200);
    }
    // Routes without authentication are not affected.
    expect((await send(server.url, { path: '/healthz' })).status).toBe(200);
  });
});
