import { existsSync, readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDb } from '../../src/storage/db.js';
import { verifyPassword } from '../../src/users/password.js';
import { createTestDatabaseUrl, testEngine } from '../helpers/app.js';
import { loyalty } from '../helpers/cli.js';
import { withServices } from '../helpers/seed.js';

const PASSWORD = 'piped-in password 123';

describe('loyalty users create', () => {
  let url: string;
  let drop: () => Promise<void>;
  let env: Record<string, string>;
  let accountId: number;

  beforeEach(async () => {
    ({ url, drop } = await createTestDatabaseUrl());
    env = { DATABASE_URL: url };
    // The account is made in this process; `users create` reads stdin, so it runs as the real process.
    accountId = await withServices(url, async (services) => (await services.accounts.create('Acme')).id);
  });
  afterEach(async () => drop());

  const create = (email: string, input: string | undefined, json = true) =>
    loyalty(
      ['users', 'create', '--account', String(accountId), '--email', email, ...(json ? ['--json'] : [])],
      env,
      input,
    );

  it('reads the password from the first line of stdin and prints {id, account_id, email}', async () => {
    const result = await create('Owner@Acme.example', `${PASSWORD}\nsecond line ignored\n`);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.json()).toEqual({ id: expect.any(Number), account_id: accountId, email: 'Owner@Acme.example' });
    expect(Object.keys(result.json())).toEqual(['id', 'account_id', 'email']);
    expect(result.stdout).not.toContain(PASSWORD);

    const db = openDb(url);
    try {
      const rows = await db.kysely.selectFrom('users').selectAll().execute();
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(PASSWORD);
      expect(await verifyPassword(PASSWORD, rows[0]?.password_hash as string)).toBe(true);
    } finally {
      await db.close();
    }
    if (testEngine === 'sqlite') {
      // Not in the file, nor in its write-ahead log.
      const path = url.slice('sqlite:'.length);
      for (const file of [path, `${path}-wal`].filter(existsSync)) {
        expect(readFileSync(file).includes(Buffer.from(PASSWORD))).toBe(false);
      }
    }
  });

  it('prints readable text without --json, and accepts a password without a final newline', async () => {
    const result = await create('text@acme.example', PASSWORD, false);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^id: +\d+\naccount_id: +\d+\nemail: +text@acme\.example\n\nSign in to the console at /,
    );
  });

  it('refuses a short password, an empty stdin, a taken email, a bad email and an unknown account', async () => {
    const short = await create('a@acme.example', 'short\n');
    expect(short.code).toBe(1);
    expect(JSON.parse(short.stderr).error).toMatchObject({
      code: 'invalid_parameter',
      message: 'password must be at least 10 characters',
    });
    expect(short.stderr).not.toContain('short\n');

    const empty = await create('a@acme.example', '');
    expect(empty.code).toBe(1);
    expect(JSON.parse(empty.stderr).error.code).toBe('invalid_parameter');

    expect((await create('a@acme.example', `${PASSWORD}\n`)).code).toBe(0);
    const taken = await create('A@ACME.example', `${PASSWORD}\n`);
    expect(taken.code).toBe(1);
    expect(JSON.parse(taken.stderr).error.details).toEqual([
      { field: 'email', message: 'is already used by another user' },
    ]);

    expect((await create('not-an-email', `${PASSWORD}\n`)).code).toBe(1);
    const unknown = await loyalty(
      ['users', 'create', '--account', '999', '--email', 'b@acme.example', '--json'],
      env,
      `${PASSWORD}\n`,
    );
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr).error.code).toBe('not_found');
  });

  it('--new-account makes the account and its first user in one step, or neither', async () => {
    const accounts = () => withServices(url, async (services) => (await services.accounts.list()).map((a) => a.name));
    const made = await loyalty(
      ['users', 'create', '--new-account', 'My shop', '--email', 'me@shop.example', '--json'],
      env,
      `${PASSWORD}\n`,
    );
    expect(made.code, made.stderr).toBe(0);
    const user = made.json() as { account_id: number };
    expect(await accounts()).toEqual(['Acme', 'My shop']);
    expect(user.account_id).not.toBe(accountId);

    // The email is taken: no account is left behind.
    const taken = await loyalty(
      ['users', 'create', '--new-account', 'Second shop', '--email', 'ME@shop.example', '--json'],
      env,
      `${PASSWORD}\n`,
    );
    expect(taken.code).toBe(1);
    expect(JSON.parse(taken.stderr).error.details).toEqual([
      { field: 'email', message: 'is already used by another user' },
    ]);
    expect(await accounts()).toEqual(['Acme', 'My shop']);

    for (const args of [[], ['--account', String(accountId), '--new-account', 'Both']]) {
      const refused = await loyalty(
        ['users', 'create', ...args, '--email', 'x@shop.example', '--json'],
        env,
        `${PASSWORD}\n`,
      );
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stderr).error.message).toMatch(
        /--account ID for an existing one, or --new-account NAME/,
      );
    }
  });
});
