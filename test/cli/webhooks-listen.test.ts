import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { loyalty } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { ROOT } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';

// `loyalty webhooks listen`: the receiver a newcomer starts to see the events of the demo. It
// verifies with the standardwebhooks package: what the service signs, it accepts; anything
// changed, it refuses.

const secret = `whsec_${randomBytes(32).toString('base64')}`;

describe('loyalty webhooks listen', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGINT');
  });

  const listen = async (args: string[] = []) => {
    let stdout = '';
    let stderr = '';
    child = spawn(
      process.execPath,
      [`${ROOT}bin/loyalty.js`, ...args, 'webhooks', 'listen', '--secret', secret, '--port', '0'],
      {
        env: { PATH: process.env.PATH ?? '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    expect(await eventually(async () => /listening for webhooks at (http:\/\/\S+\/)/.test(stderr), 10_000, 20)).toBe(
      true,
    );
    const url = /listening for webhooks at (http:\/\/\S+\/)/.exec(stderr)![1]!;
    return { url, stdout: () => stdout, stderr: () => stderr };
  };
  const deliver = (url: string, body: string, headers: Record<string, string>) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const signed = (id: string, body: string) => {
    const timestamp = new Date();
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, timestamp, body),
    };
  };

  it('suggests a command that works as printed (issue 49: it failed without WEBHOOK_ALLOW_PRIVATE_NETWORKS)', async () => {
    const receiver = await listen();
    const line = receiver
      .stderr()
      .split('\n')
      .find((l) => l.includes('webhooks create'));
    const suggested = /^\s*((?:[A-Z_]+=\S+ )*)npx loyalty (.+)$/.exec(line ?? '');
    expect(suggested, receiver.stderr()).not.toBeNull();
    const database = await createTestDatabase();
    try {
      const env = { DATABASE_URL: database.url };
      const account = (await loyalty(['accounts', 'create', '--name', 'Listening', '--json'], env)).json().id;
      const vars = Object.fromEntries(
        suggested![1]!
          .trim()
          .split(' ')
          .filter(Boolean)
          .map((pair) => pair.split('=') as [string, string]),
      );
      const args = suggested![2]!.replace('--account ID', `--account ${account}`).split(' ');
      const made = await loyalty([...args, '--json'], { ...env, ...vars });
      expect(made.code, made.stderr).toBe(0);
      expect(made.json().webhook_endpoint.url).toBe(receiver.url);
    } finally {
      await database.drop();
    }
  });

  it('prints a verified delivery and answers 204; refuses a changed body with 400', async () => {
    const receiver = await listen();
    const body = JSON.stringify({
      id: 'evt_abcdefghijklmnopqrstu',
      type: 'ping',
      account_id: 1,
      created_at: '2026-11-25T00:00:00.000Z',
      data: {},
    });
    const headers = signed('evt_abcdefghijklmnopqrstu', body);
    expect((await deliver(receiver.url, body, headers)).status).toBe(204);
    expect(
      await eventually(async () => receiver.stdout().includes('verified ping evt_abcdefghijklmnopqrstu'), 5000, 20),
    ).toBe(true);

    const changed = body.replace('"account_id":1', '"account_id":2');
    expect((await deliver(receiver.url, changed, headers)).status).toBe(400);
    expect(
      await eventually(
        async () => /refused a delivery \(evt_abcdefghijklmnopqrstu\)/.test(receiver.stderr()),
        5000,
        20,
      ),
    ).toBe(true);
    expect(receiver.stdout()).not.toContain('"account_id":2');
  });

  it('prints one JSON line per event with --json', async () => {
    const receiver = await listen(['--json']);
    const body = JSON.stringify({
      id: 'evt_zyxwvutsrqponmlkjihgf',
      type: 'customer.created',
      account_id: 3,
      created_at: '2026-11-25T00:00:00.000Z',
      data: { customer: { id: 9 } },
    });
    expect((await deliver(receiver.url, body, signed('evt_zyxwvutsrqponmlkjihgf', body))).status).toBe(204);
    expect(await eventually(async () => receiver.stdout().trim().length > 0, 5000, 20)).toBe(true);
    expect(JSON.parse(receiver.stdout().trim())).toEqual(JSON.parse(body));
  });

  it('refuses a secret that is not an endpoint secret', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      let stderr = '';
      const bad = spawn(process.execPath, [`${ROOT}bin/loyalty.js`, 'webhooks', 'listen', '--secret', 'hunter2'], {
        env: { PATH: process.env.PATH ?? '' },
      });
      bad.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      bad.on('exit', (code) => resolve({ code, stderr }));
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--secret must be an endpoint secret (whsec_…)');
  });
});
