import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/database.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';

// WEBHOOK_ALLOW_PRIVATE_NETWORKS=true is for tests and private deployments only: a server started
// with it says so once in its log (once for all the workers of WORKERS=N), and one without it never.

const WARNING = /"level":40,.*"msg":"WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: webhooks may use http:\/\//g;

// The servers run on SQLite files of their own whatever the pass: once is enough (as test/server/).
describe.runIf(testEngine === 'sqlite')('the server with WEBHOOK_ALLOW_PRIVATE_NETWORKS', () => {
  const dirs: string[] = [];
  let server: ServerProcess | undefined;
  const start = async (env: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), 'loyalty-private-'));
    dirs.push(dir);
    server = await startServer({ CWD: dir, ...env });
    // The port is open once every worker listens; the primary warned before forking them.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    return server.output();
  };
  afterEach(async () => {
    await server?.stop('SIGTERM');
    server = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  // Each starts a real server (two processes with WORKERS=2), beside the suite's other files.
  const SLOW = 120_000;

  it('warns once at start when it is on', { timeout: SLOW }, async () => {
    expect((await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })).match(WARNING)).toHaveLength(1);
  });

  it('warns once for all the workers of WORKERS=2', { timeout: SLOW }, async () => {
    const output = await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WORKERS: '2', RATE_LIMIT_PER_SECOND: '0' });
    expect(output.match(WARNING)).toHaveLength(1);
  });

  it('does not warn when it is off', { timeout: SLOW }, async () => {
    expect((await start({})).match(WARNING)).toBeNull();
  });
});
