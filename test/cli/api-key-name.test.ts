import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDb } from '../../src/storage/db.js';
import { loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// `loyalty api-keys create --name`: the name the console lists the key by.
describe('loyalty api-keys create --name', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  beforeEach(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
  });
  afterEach(() => database.drop());

  async function names(): Promise<string[]> {
    const db = openDb(env.DATABASE_URL!);
    try {
      const rows = await db.kysely.selectFrom('api_keys').select('name').orderBy('id').execute();
      return rows.map((row) => row.name);
    } finally {
      await db.close();
    }
  }

  it('names the key, defaults the name, and refuses a blank one with nothing created', async () => {
    const account = (await loyaltyInProcess(['accounts', 'create', '--name', 'Acme', '--json'], env)).json();
    const id = String(account.id);
    const named = await loyaltyInProcess(
      ['api-keys', 'create', '--account', id, '--name', 'Storefront', '--json'],
      env,
    );
    expect(named.code, named.stderr).toBe(0);
    expect(Object.keys(named.json()).sort()).toEqual(['id', 'key', 'scopes']);
    expect((await loyaltyInProcess(['api-keys', 'create', '--account', id, '--json'], env)).code).toBe(0);
    const blank = await loyaltyInProcess(['api-keys', 'create', '--account', id, '--name', '  ', '--json'], env);
    expect(blank.code).not.toBe(0);
    expect(blank.stderr).toMatch(/name/);
    expect(await names()).toEqual(['Storefront', 'Unnamed key']);
  });
});
