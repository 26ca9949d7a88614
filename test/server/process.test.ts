import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../helpers/server-process.js';

describe('the server process', () => {
  const dirs: string[] = [];
  let server: ServerProcess | undefined;
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'loyalty-proc-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('starts with no environment at all on the embedded default database and answers /healthz', async () => {
    const cwd = tempDir();
    // Only PATH: no PORT, no DATABASE_URL, so it listens on 127.0.0.1:3000.
    server = await startServer({ CWD: cwd }, { bare: true });
    expect(server.url).toBe('http://127.0.0.1:3000');
    const response = await fetch(`${server.url}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    expect(readdirSync(join(cwd, 'data'))).toContain('loyalty.db');
    expect(server.output()).toContain(`sqlite:${join(cwd, 'data', 'loyalty.db')}`);
  });

  it('exits 0 on SIGTERM and on SIGINT, closing the database', async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      server = await startServer({ CWD: tempDir() });
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect(await server.stop(signal)).toBe(0);
      expect(server.output()).toMatch(/"msg":"stopped"/);
    }
  });

  it('refuses to start with a readable message for each configuration mistake', async () => {
    await expect(startServer({ CWD: tempDir(), PORT: 'eighty', LOG_LEVEL: 'loud' })).rejects.toThrow(
      /exited with 78[\s\S]*PORT must be a whole number[\s\S]*LOG_LEVEL must be one of/,
    );
    await expect(startServer({ CWD: tempDir(), HOST: '0.0.0.0' })).rejects.toThrow(/neither TLS .* nor TRUST_PROXY/);
  });

  it('says where the database is when it cannot be opened', async () => {
    const cwd = tempDir();
    await expect(startServer({ CWD: cwd, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' })).rejects.toThrow(
      /Cannot prepare the database at postgres:\/\/nobody@127\.0\.0\.1:1\/none/,
    );
  });

  it('speaks HTTPS only with TLS files, with Strict-Transport-Security', async () => {
    const dir = tempDir();
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    server = await startServer({ CWD: dir, TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'key.pem') });
    const { status, hsts } = await new Promise<{ status: number; hsts: string | undefined }>((resolve, reject) => {
      request(
        `https://127.0.0.1:${server!.port}/healthz`,
        { ca: readFileSync(join(dir, 'cert.pem')), servername: 'localhost', checkServerIdentity: () => undefined },
        (res) => {
          res.resume();
          resolve({
            status: res.statusCode ?? 0,
            hsts: res.headers['strict-transport-security'] as string | undefined,
          });
        },
      )
        .on('error', reject)
        .end();
    });
    expect(status).toBe(200);
    expect(hsts).toMatch(/max-age=31536000/);
    await expect(fetch(`http://127.0.0.1:${server.port}/healthz`)).rejects.toThrow();
  });
});
