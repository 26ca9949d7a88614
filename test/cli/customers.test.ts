import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { createServices } from '../../src/services.js';
import { openDb } from '../../src/storage/db.js';
import { cliChecks, loyalty, loyaltyInProcess } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('loyalty customers / customer-identities', () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let account: string;

  const { ok, fails } = cliChecks(() => env);

  beforeEach(async () => {
    database = await createTestDatabase();
    env = { DATABASE_URL: database.url };
    account = String((await ok(['accounts', 'create', '--name', 'Acme'])).id);
  });
  afterEach(() => database.drop());

  it('creates a customer and prints {id, email, first_name, last_name}', async () => {
    const customer = await ok([
      'customers',
      'create',
      '--account',
      account,
      '--email',
      '  Jane@Example.com ',
      '--first-name',
      'Jane',
      '--last-name',
      'Doe',
    ]);
    expect(customer).toEqual({
      id: expect.any(Number),
      email: 'Jane@Example.com',
      first_name: 'Jane',
      last_name: 'Doe',
    });
    const bare = await ok(['customers', 'create', '--account', account, '--email', 'bob@example.com']);
    expect(bare).toEqual({ id: expect.any(Number), email: 'bob@example.com', first_name: null, last_name: null });
  });

  // The real process; the other tests run the same program in this one.
  it('refuses an email the account already has, in any case and spacing, naming the customer', async () => {
    const customer = await ok(['customers', 'create', '--account', account, '--email', 'jane@example.com'], loyalty);
    const error = await fails(['customers', 'create', '--account', account, '--email', ' JANE@example.COM '], loyalty);
    expect(error).toMatchObject({ code: 'invalid_parameter', details: [{ field: 'customer.email' }] });
    expect(error.message).toBe(`a customer with this email already exists (id ${customer.id})`);

    const text = await loyalty(['customers', 'create', '--account', account, '--email', 'jane@example.com'], env);
    expect(text.code).toBe(1);
    expect(text.stderr).toBe(`error: a customer with this email already exists (id ${customer.id})\n`);
    expect(await ok(['customers', 'list', '--account', account], loyalty)).toHaveLength(1);
  });

  it('allows the same email in another account', async () => {
    const other = String((await ok(['accounts', 'create', '--name', 'Other'])).id);
    await ok(['customers', 'create', '--account', account, '--email', 'jane@example.com']);
    await ok(['customers', 'create', '--account', other, '--email', 'jane@example.com']);
  });

  it('validates like the API: email format and length, name length, the account', async () => {
    const bad = await fails(['customers', 'create', '--account', account, '--email', 'not-an-email']);
    expect(bad).toMatchObject({ code: 'invalid_parameter', details: [{ field: 'customer.email' }] });
    const long = await fails(['customers', 'create', '--account', account, '--email', `${'a'.repeat(250)}@x.io`]);
    expect(long.details[0].field).toBe('customer.email');
    const name = await fails([
      'customers',
      'create',
      '--account',
      account,
      '--email',
      'a@example.com',
      '--first-name',
      'f'.repeat(256),
    ]);
    expect(name.details[0].field).toBe('customer.first_name');
    expect(await fails(['customers', 'create', '--account', '999', '--email', 'a@example.com'])).toMatchObject({
      code: 'not_found',
    });
    expect(await fails(['customers', 'create', '--account', 'x', '--email', 'a@example.com'])).toMatchObject({
      code: 'invalid_parameter',
    });
    expect(await ok(['customers', 'list', '--account', account])).toEqual([]);
  });

  it('lists customers and the identities linked to them, as JSON and text', async () => {
    const jane = await ok([
      'customers',
      'create',
      '--account',
      account,
      '--email',
      'Jane@Example.com',
      '--first-name',
      'Jane',
    ]);
    // An identity sent later (as the API would) links to the CLI's customer by its email.
    const db = openDb(env.DATABASE_URL!);
    try {
      const services = createServices(db, { clock: systemClock, accessTokenTtlSeconds: 3600 });
      const { identity } = await services.customerIdentities.createOrUpdate(Number(account), {
        distinct_id: 'crm-1',
        email: ' JANE@example.com ',
        properties: { plan: 'gold' },
      });
      expect(identity.customer_id).toBe(jane.id);
    } finally {
      await db.close();
    }

    expect(await ok(['customers', 'list', '--account', account])).toEqual([jane]);
    expect(await ok(['customer-identities', 'list', '--account', account])).toEqual([
      {
        id: expect.any(Number),
        first_name: null,
        last_name: null,
        email: 'JANE@example.com',
        distinct_id: 'crm-1',
        properties: { plan: 'gold' },
        customer_id: jane.id,
      },
    ]);

    const customersText = await loyaltyInProcess(['customers', 'list', '--account', account], env);
    expect(customersText.stdout).toBe(`${jane.id}\tJane@Example.com\tJane\n`);
    const identitiesText = await loyaltyInProcess(['customer-identities', 'list', '--account', account], env);
    expect(identitiesText.stdout).toContain(`crm-1\tJANE@example.com\t-\tcustomer ${jane.id}\t{"plan":"gold"}`);
  });

  it('says so when there is nothing to list, and refuses an unknown account', async () => {
    expect((await loyaltyInProcess(['customers', 'list', '--account', account], env)).stdout).toBe('(no customers)\n');
    expect((await loyaltyInProcess(['customer-identities', 'list', '--account', account], env)).stdout).toBe(
      '(no customer identities)\n',
    );
    expect(await fails(['customer-identities', 'list', '--account', '999'])).toMatchObject({ code: 'not_found' });
  });
});
