import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashPassword, setHashCostForTests, verifyPassword } from '../../src/users/password.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { TEST_HASH_LOG2N } from '../helpers/setup.js';

let t: TestApp;
beforeEach(async () => {
  t = await createTestApp();
});
afterEach(async () => t.close());

describe('UsersService', () => {
  it('creates a user of an account, storing only an scrypt hash with its parameters', async () => {
    // The production cost, which every other test lowers (test/helpers/setup.ts).
    setHashCostForTests(null);
    try {
      const account = await t.services.accounts.create('Acme');
      const user = await t.services.users.create(account.id, {
        email: ' Owner@Acme.example ',
        password: 'a password of 22 chars',
      });
      expect(user).toEqual({ id: expect.any(Number), account_id: account.id, email: 'Owner@Acme.example' });
      const row = await t.db.kysely.selectFrom('users').selectAll().executeTakeFirstOrThrow();
      expect(row.email_normalized).toBe('owner@acme.example');
      expect(row.password_hash).toMatch(/^scrypt\$15\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
      expect(JSON.stringify(row)).not.toContain('a password of 22 chars');
      expect(await verifyPassword('a password of 22 chars', row.password_hash)).toBe(true);
      expect(await t.services.users.authenticate('owner@acme.example', 'a password of 22 chars')).toEqual(user);
    } finally {
      setHashCostForTests(TEST_HASH_LOG2N);
    }
  });

  it('salts: the same password hashes differently each time', async () => {
    const [a, b] = await Promise.all([hashPassword('same password'), hashPassword('same password')]);
    expect(a).not.toBe(b);
    expect(await verifyPassword('same password', a)).toBe(true);
    expect(await verifyPassword('same password ', a)).toBe(false);
  });

  it('refuses malformed or absurd stored hashes instead of trying them', async () => {
    for (const stored of [
      '',
      'plain',
      'scrypt$15$8$1$abc',
      'scrypt$40$8$1$c2FsdHNhbHQ=$a2V5a2V5a2V5a2V5a2V5',
      'bcrypt$x$y$z$a$b',
    ]) {
      expect(await verifyPassword('whatever', stored)).toBe(false);
    }
  });

  it('refuses short passwords (10 characters at least, counted as characters)', async () => {
    const account = await t.services.accounts.create('Acme');
    await expect(
      t.services.users.create(account.id, { email: 'a@acme.example', password: 'nine char' }),
    ).rejects.toMatchObject({
      code: 'invalid_parameter',
      details: [{ field: 'password', message: 'must be at least 10 characters' }],
    });
    // Nine emoji are 18 UTF-16 units but 9 characters.
    await expect(
      t.services.users.create(account.id, { email: 'a@acme.example', password: '😀'.repeat(9) }),
    ).rejects.toMatchObject({ code: 'invalid_parameter' });
    await expect(
      t.services.users.create(account.id, { email: 'a@acme.example', password: '😀'.repeat(10) }),
    ).resolves.toBeDefined();
  });

  it('keeps emails unique across users and accounts, case-insensitively', async () => {
    const a = await t.services.accounts.create('A');
    const b = await t.services.accounts.create('B');
    await t.services.users.create(a.id, { email: 'owner@shop.example', password: 'long enough password' });
    await expect(
      t.services.users.create(b.id, { email: 'OWNER@shop.example', password: 'long enough password' }),
    ).rejects.toMatchObject({ code: 'invalid_parameter', details: [{ field: 'email' }] });
    expect(await t.db.kysely.selectFrom('users').selectAll().execute()).toHaveLength(1);
  });

  it('refuses a bad email and an unknown account', async () => {
    const account = await t.services.accounts.create('Acme');
    await expect(
      t.services.users.create(account.id, { email: 'not-an-email', password: 'long enough password' }),
    ).rejects.toMatchObject({
      code: 'invalid_parameter',
    });
    await expect(
      t.services.users.create(999, { email: 'x@acme.example', password: 'long enough password' }),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('authenticates with the right password only', async () => {
    const account = await t.services.accounts.create('Acme');
    const user = await t.services.users.create(account.id, {
      email: 'owner@acme.example',
      password: 'long enough password',
    });
    expect(await t.services.users.authenticate('OWNER@acme.example ', 'long enough password')).toEqual(user);
    expect(await t.services.users.authenticate('owner@acme.example', 'long enough passwor')).toBeNull();
    expect(await t.services.users.authenticate('ghost@acme.example', 'long enough password')).toBeNull();
  });
});
