import { once } from 'node:events';
import { type AddressInfo, connect, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isClientAbort, isDatabaseError, toContractError } from '../../src/error-mapping.js';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/wait.js';

// A client that closes its connection halfway through sending a body is the client's doing, not
// the database's: loyalty_database_errors_total (what docs/operations.md has operators alert on)
// must not move, and nothing may be logged as the service being unavailable. Without a credential
// anyone can reach /oauth2/token and /admin/sign-in, so this must hold there too.

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

interface LogEntry {
  level: number;
  msg: string;
  reqId?: string;
  err?: { code?: string; message?: string };
}
const logged = (): LogEntry[] => lines.map((line) => JSON.parse(line));

async function databaseErrors(): Promise<number> {
  const scraped = await t.app.inject({ method: 'GET', url: '/metrics' });
  const match = /^loyalty_database_errors_total (\d+)$/m.exec(scraped.body);
  if (!match) throw new Error(`no loyalty_database_errors_total in:\n${scraped.body}`);
  return Number(match[1]);
}

/**
 * Sends the headers and half of the declared body, waits until the server has read them (the
 * request is logged), then destroys the socket; resolves once the server has dealt with it: its
 * request id has a log line after 'incoming request'.
 */
async function abortHalfway(path: string, type: string, body: string, headers = ''): Promise<string> {
  const before = lines.length;
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${type}\r\n${headers}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, Math.floor(body.length / 2))}`,
  );
  let id: string | undefined;
  const arrived = await eventually(
    async () => {
      id = logged()
        .slice(before)
        .find((entry) => entry.msg === 'incoming request')?.reqId;
      return id !== undefined;
    },
    5000,
    20,
  );
  expect(arrived, `the server never logged ${path}`).toBe(true);
  // Give the server a moment to be reading the body (after authentication, for /v1).
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.destroy();
  const settled = await eventually(
    async () => logged().some((entry) => entry.reqId === id && entry.msg !== 'incoming request'),
    5000,
    20,
  );
  expect(settled, `nothing logged after ${path} was aborted`).toBe(true);
  // Whatever the server does with the error, it has done it within a few turns of the log line.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return id as string;
}

describe('a client that aborts its request body', () => {
  const form = 'application/x-www-form-urlencoded';
  const cases: [string, () => [string, string, string, string?]][] = [
    [
      'POST /oauth2/token, without a credential',
      () => ['/oauth2/token', form, `grant_type=authorization_code&code=${'c'.repeat(200)}&client_id=x`],
    ],
    [
      'POST /admin/sign-in, without a credential',
      () => ['/admin/sign-in', form, `email=owner%40example.com&password=${'p'.repeat(200)}&csrf=x`],
    ],
    [
      'a /v1 route, with a valid token',
      () => [
        '/v1/customer_identities/create_or_update',
        'application/json',
        JSON.stringify({ customer_identity: { distinct_id: 'abort-1', email: `${'a'.repeat(200)}@example.com` } }),
        `Authorization: Bearer ${tenant.accessToken}\r\n`,
      ],
    ],
  ];

  it.each(cases)('%s is not counted as a database error', async (_name, request) => {
    const before = await databaseErrors();
    const [path, type, body, headers] = request();
    const id = await abortHalfway(path, type, body, headers);
    expect(await databaseErrors()).toBe(before);
    const ofRequest = logged().filter((entry) => entry.reqId === id);
    // Nothing at warn level or above: not "unavailable", not a failure of the server.
    expect(ofRequest.filter((entry) => entry.level >= 40)).toEqual([]);
    expect(lines.join('\n')).not.toContain('temporarily unavailable');
  });

  it('leaves the server answering, and a whole request still counts nothing', async () => {
    const before = await databaseErrors();
    const answer = await t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      headers: { 'content-type': form },
      payload: 'grant_type=authorization_code&code=nope&client_id=x',
    });
    expect(answer.statusCode).toBeGreaterThanOrEqual(400);
    expect(answer.statusCode).toBeLessThan(500);
    expect(await databaseErrors()).toBe(before);
  });
});

describe("a database connection's reset", () => {
  it('still counts as a database error and answers unavailable', async () => {
    // A real socket reset by its peer, as a driver's connection to a failing database sees it.
    const peer = createServer((socket) => socket.resetAndDestroy());
    peer.listen(0, '127.0.0.1');
    await once(peer, 'listening');
    try {
      const client = connect((peer.address() as AddressInfo).port, '127.0.0.1');
      const [reset] = (await once(client, 'error')) as [NodeJS.ErrnoException];
      expect(reset.code).toBe('ECONNRESET');
      expect(isClientAbort(reset)).toBe(false);
      expect(isDatabaseError(reset)).toBe(true);
      expect(toContractError(reset).code).toBe('unavailable');
    } finally {
      peer.close();
    }
  });
});
