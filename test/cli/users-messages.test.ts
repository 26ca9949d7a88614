import { spawn } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loyalty } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { ROOT } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';

const PASSWORD = 'piped-in password 123';

/**
 * Runs `loyalty ARGS` on a terminal (util-linux `script` gives it a pseudo-terminal), typing each
 * of `typed` once the prompt before it has appeared. Resolves with everything the terminal showed.
 */
async function onTerminal(args: string[], env: Record<string, string>, typed: string[]): Promise<string> {
  const command = [process.execPath, `${ROOT}bin/loyalty.js`, ...args].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'dumb', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  child.stdout.on('data', (chunk) => {
    screen += chunk;
  });
  child.stderr.on('data', (chunk) => {
    screen += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const prompts = ['Password: ', 'Repeat the password: '];
  for (const [i, line] of typed.entries()) {
    const prompt = prompts[i] as string;
    expect(await eventually(async () => screen.includes(prompt), 15_000, 50), screen).toBe(true);
    child.stdin.write(`${line}\r`);
  }
  await exited;
  return screen;
}

describe('loyalty users create: its messages', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let accountId: string;
  beforeEach(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
    accountId = String((await loyalty(['accounts', 'create', '--name', 'Acme', '--json'], env)).json().id);
  });
  afterEach(() => database.drop());

  it('two different passwords typed at the prompt: says so in words, and creates no user', async () => {
    const args = ['users', 'create', '--account', accountId, '--email', 'owner@acme.example'];
    const screen = await onTerminal(args, env, ['first password 123', 'second password 456']);
    expect(screen).toContain('error: the two passwords differ; nothing was created');
    expect(screen).not.toMatch(/password the two/);
    // No echo: neither password is on the screen.
    expect(screen).not.toContain('first password 123');

    const json = await onTerminal([...args, '--json'], env, ['first password 123', 'second password 456']);
    const error = JSON.parse(json.slice(json.indexOf('{"error"')).split(/\r?\n/)[0] as string).error;
    expect(error).toEqual({
      code: 'invalid_parameter',
      message: 'the two passwords differ; nothing was created',
      details: [{ field: 'password', message: 'differs from the repeat' }],
    });

    // The email is still free: nothing was created.
    const made = await loyalty([...args, '--json'], env, `${PASSWORD}\n`);
    expect(made.code, made.stderr).toBe(0);
  }, 90_000);

  it('the same password twice on a terminal creates the user', async () => {
    const screen = await onTerminal(
      ['users', 'create', '--account', accountId, '--email', 'tty@acme.example'],
      { ...env, PORT: '31991' },
      [PASSWORD, PASSWORD],
    );
    expect(screen).toMatch(/email: +tty@acme\.example/);
    expect(screen).toContain('Sign in to the console at http://127.0.0.1:31991/admin');
  }, 60_000);

  it('an empty stdin is refused in words', async () => {
    const empty = await loyalty(['users', 'create', '--account', accountId, '--email', 'a@acme.example'], env, '');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toBe(
      'error: a password is required: pipe it as the first line of stdin, or run on a terminal\n',
    );
  });

  it.each([
    [{}, 'http://127.0.0.1:3000/admin'],
    [{ PORT: '31990', HOST: '0.0.0.0' }, 'http://127.0.0.1:31990/admin'],
    [{ PUBLIC_URL: 'https://loyalty.example.com' }, 'https://loyalty.example.com/admin'],
  ])('ends by saying where to sign in (%j)', async (vars, url) => {
    const result = await loyalty(
      ['users', 'create', '--account', accountId, '--email', `u${Object.keys(vars).length}@acme.example`],
      { ...env, ...vars },
      `${PASSWORD}\n`,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^id: +\d+\naccount_id: +\d+\nemail: +u\d@acme\.example\n\n/);
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe(
      `Sign in to the console at ${url} (with the server running: npm start).`,
    );
  });

  it('--json stays {id, account_id, email}', async () => {
    const result = await loyalty(
      ['users', 'create', '--account', accountId, '--email', 'json@acme.example', '--json'],
      env,
      `${PASSWORD}\n`,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(Object.keys(result.json())).toEqual(['id', 'account_id', 'email']);
  });
});
