import { connect } from 'node:net';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerSendBatching } from '../../src/http/send-batching.js';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';

// A body over the 64 KiB limit is answered 413 payload_too_large once: the error handler waits
// for the rest of the body before answering, and the answer it then sends must be the only one
// (send batching holds it until the end of the turn, so Fastify must not be left to send again).

const lines: string[] = [];
let t: TestApp;
let tenant: Tenant;
let port: number;

beforeAll(async () => {
  // No load shedding: on a busy test machine a 503 would hide what is tested here.
  t = await createTestApp({ MAX_EVENT_LOOP_DELAY_MS: '0' }, { logLines: lines });
  tenant = await createTenant(t.services);
  port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
});
afterAll(async () => t.close());

/** Sends the request's parts over one connection and resolves with everything read back once the server closes. */
function exchange(parts: (string | Buffer)[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
    });
    // The server may close while the client is still writing: what was read is the answer.
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' ? undefined : reject(error)));
    socket.on('close', () => resolve(answer));
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no close in 10 s; read so far:\n${answer}`)));
    for (const part of parts) socket.write(part);
  });
}

/** The HTTP responses in what a connection read: their status lines. */
function statusLines(answer: string): string[] {
  return answer.match(/^HTTP\/1\.1 \d{3} .*$/gm) ?? [];
}

function expectOne413(answer: string, json: boolean): void {
  expect(statusLines(answer)).toEqual(['HTTP/1.1 413 Payload Too Large']);
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
  // Exactly the one body, nothing after it.
  expect(Buffer.byteLength(body, 'latin1')).toBe(length);
  if (!json) return;
  const id = /x-request-id: (\S+)/i.exec(head)?.[1];
  expect(JSON.parse(body)).toEqual({
    error: { code: 'payload_too_large', message: expect.any(String), request_id: id },
  });
}

const oversized = Buffer.alloc(70 * 1024, 'x');

function logged(): { level: number; msg: string; err?: { message?: string; code?: string } }[] {
  return lines.map((line) => JSON.parse(line));
}

function expectNothingSentTwice(): void {
  const text = lines.join('\n');
  expect(text).not.toContain('Reply was already sent');
  expect(text).not.toContain('ERR_HTTP_HEADERS_SENT');
  expect(text).not.toContain('FST_ERR_REP_ALREADY_SENT');
  // Nothing at error level (50) or above: a client's oversize body is not the server's failure.
  expect(logged().filter((entry) => entry.level >= 50)).toEqual([]);
}

describe('an oversize body', () => {
  const post = (path: string, type: string, headers: string) =>
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: ${type}\r\n${headers}\r\n`;

  it('declared by Content-Length on /v1 is answered 413 once, with the contract body', async () => {
    lines.length = 0;
    const answer = await exchange([
      post(
        '/v1/customer_identities/create_or_update',
        'application/json',
        `Authorization: Bearer ${tenant.accessToken}\r\nContent-Length: ${oversized.length}\r\n`,
      ),
      oversized,
    ]);
    expectOne413(answer, true);
    // The answer is only written after the batching turn; give a second send time to show.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expectNothingSentTwice();
  });

  it('sent chunked on /v1 (counted while read) is answered 413 once', async () => {
    lines.length = 0;
    const chunk = 'x'.repeat(16 * 1024);
    const answer = await exchange([
      post(
        '/v1/customer_identities/create_or_update',
        'application/json',
        `Authorization: Bearer ${tenant.accessToken}\r\nTransfer-Encoding: chunked\r\n`,
      ),
      ...Array.from({ length: 6 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
      '0\r\n\r\n',
    ]);
    expectOne413(answer, true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expectNothingSentTwice();
  });

  // The token endpoint answers in RFC 6749's form (400 invalid_request), the console in a page.
  it.each([
    ['/oauth2/token', 'HTTP/1.1 400 Bad Request'],
    ['/admin/sign-in', 'HTTP/1.1 413 Payload Too Large'],
  ])('on %s is answered once', async (path, status) => {
    lines.length = 0;
    const answer = await exchange([
      post(path, 'application/x-www-form-urlencoded', `Content-Length: ${oversized.length}\r\n`),
      oversized,
    ]);
    expect(statusLines(answer)).toEqual([status]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expectNothingSentTwice();
  });

  it('leaves the server answering', async () => {
    const answer = await exchange(['GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n']);
    expect(statusLines(answer)).toEqual(['HTTP/1.1 200 OK']);
  });
});

describe('send batching', () => {
  it('writes an answer once when an async handler sends it and resolves to nothing', async () => {
    const logs: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    });
    const app = Fastify({ logger: { level: 'debug', stream } });
    registerSendBatching(app);
    // Fastify asks for `return reply` here; without it, it sends again once the promise resolves
    // to nothing, while the first answer still waits for the end of the turn.
    app.get('/sent-without-return', async (_request, reply) => {
      reply.code(202).send({ once: true });
    });
    try {
      const port = Number(new URL(await app.listen({ port: 0, host: '127.0.0.1' })).port);
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let read = '';
        socket.on('data', (chunk) => {
          read += chunk.toString('latin1');
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(read));
        socket.write('GET /sent-without-return HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      });
      expect(statusLines(answer)).toEqual(['HTTP/1.1 202 Accepted']);
      expect(answer.split('\r\n\r\n')[1]).toBe('{"once":true}');
      const text = logs.join('\n');
      expect(text).not.toContain('ERR_HTTP_HEADERS_SENT');
      expect(text).not.toContain('Reply was already sent');
      expect(logs.map((line) => JSON.parse(line).level).filter((level) => level >= 40)).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
