import { spawn } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loyalty } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { withServices } from '../helpers/seed.js';
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

describe('loyalty users list and reset-password (issue 49)', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  beforeEach(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
  });
  afterEach(() => database.drop());

  it("lists an account's users without their hashes, and resets a password, signing the user out everywhere", async () => {
    const made = await loyalty(
      ['users', 'create', '--new-account', 'Acme', '--email', 'Owner@Acme.example', '--json'],
      env,
      `${PASSWORD}\n`,
    );
    expect(made.code, made.stderr).toBe(0);
    const owner = made.json();
    const second = await loyalty(
      ['users', 'create', '--account', String(owner.account_id), '--email', 'clerk@acme.example', '--json'],
      env,
      `${PASSWORD}\n`,
    );
    expect(second.code, second.stderr).toBe(0);

    const listed = await loyalty(['users', 'list', '--account', String(owner.account_id), '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json()).toEqual([
      { id: owner.id, account_id: owner.account_id, email: 'Owner@Acme.example' },
      { id: second.json().id, account_id: owner.account_id, email: 'clerk@acme.example' },
    ]);
    const text = await loyalty(['users', 'list', '--account', String(owner.account_id)], env);
    expect(text.stdout).toContain('clerk@acme.example');
    expect(text.stdout).not.toMatch(/scrypt|password/i);

    // Signed in from a browser: the reset ends that session.
    const cookie = await withServices(database.url, async (services) => {
      const session = await services.sessions.start();
      const result = await services.sessions.signIn(session, 'owner@acme.example', PASSWORD, '127.0.0.1');
      expect(result.kind).toBe('signed_in');
      return (result as { session: { id: string } }).session.id;
    });
    const reset = await loyalty(
      ['users', 'reset-password', '--email', 'OWNER@acme.example', '--json'],
      env,
      'a brand new password\n',
    );
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.json()).toEqual({ ...owner, sessions_ended: 1 });
    await withServices(database.url, async (services) => {
      // The cookie now names an anonymous session: signed out.
      expect((await services.sessions.find(cookie))?.user ?? null).toBeNull();
      expect(await services.users.authenticate('owner@acme.example', PASSWORD)).toBeNull();
      expect(await services.users.authenticate('owner@acme.example', 'a brand new password')).toMatchObject({
        id: owner.id,
      });
      // The other user keeps their password.
      expect(await services.users.authenticate('clerk@acme.example', PASSWORD)).not.toBeNull();
    });

    // An unknown email, and a short password, change nothing.
    const unknown = await loyalty(
      ['users', 'reset-password', '--email', 'nobody@acme.example', '--json'],
      env,
      'another long password\n',
    );
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr).error.code).toBe('not_found');
    const short = await loyalty(['users', 'reset-password', '--email', 'owner@acme.example', '--json'], env, 'short\n');
    expect(JSON.parse(short.stderr).error).toMatchObject({
      code: 'invalid_parameter',
      details: [{ field: 'password' }],
    });
  }, 60_000);
});
