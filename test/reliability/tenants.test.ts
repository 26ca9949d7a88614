import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReferralSettings } from '../../src/referral-settings/schemas.js';
import type { Db } from '../../src/storage/db.js';
import { createTenant, createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { withServices } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { CREATE_OR_UPDATE, checkContractError, openStore, Servers, sendJson } from './support.js';

// Account B, with either kind of credential, can neither read nor change anything of account A
// through a real server process: not its settings, rules, cursors, identities or customers.

const settingsOfB: ReferralSettings = {
  ...referralSettingsFixture,
  status: 'inactive',
  sender_reward: { name: 'B sender', image: { url: 'https://b.example/s.png', content_type: null } },
};

const rule = (name: string, enabled = true) => ({
  name,
  image_url: 'https://cdn.example/rule.png',
  reward: { type: 'points' },
  reward_value: { type: 'fixed', fixed: { value: 5 } },
  enabled,
});

/** Every row of one account in the tables an API caller could reach. */
async function rowsOf(store: Db, accountId: number): Promise<string> {
  const parts: string[] = [];
  for (const table of ['customers', 'customer_identities', 'referral_settings', 'earning_rules']) {
    const { rows } = await sql<
      Record<string, unknown>
    >`select * from ${sql.table(table)} where account_id = ${accountId}`.execute(store.kysely);
    parts.push(
      `${table}: ${rows
        .map((r) => JSON.stringify(r))
        .sort()
        .join('\n')}`,
    );
  }
  return parts.join('\n');
}

describe(`tenant isolation through a real server process (${testEngine})`, () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  let server: ServerProcess;
  let store: Db;
  let a: Tenant;
  let b: Tenant;
  let c: Tenant;
  let rulesOfA: number[];
  let rulesOfB: number[];
  let identityOfA: { id: number; customer_id: number };
  let snapshotOfA: string;

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    ({ a, b, c, rulesOfA, rulesOfB, identityOfA } = await withServices(database.url, async (services) => {
      const a = await createTenant(services, 'Shop A');
      const b = await createTenant(services, 'Shop B');
      const c = await createTenant(services, 'Shop C'); // no settings, rules or customers
      await services.referralSettings.set(a.accountId, referralSettingsFixture);
      await services.referralSettings.set(b.accountId, settingsOfB);
      const created = async (tenant: Tenant, rules: object[]) =>
        ((await services.earningRules.create(tenant.accountId, rules)) as { id: number; enabled: boolean }[])
          .filter((r) => r.enabled)
          .map((r) => r.id)
          .sort((x, y) => y - x);
      // Interleaved, so A's and B's ids alternate: a leak across accounts cannot hide in a gap.
      const rulesOfA: number[] = [];
      const rulesOfB: number[] = [];
      for (let i = 0; i < 5; i++) {
        rulesOfA.push(...(await created(a, [rule(`A${i}`), rule(`A${i} off`, false)])));
        rulesOfB.push(...(await created(b, [rule(`B${i}`)])));
      }
      const { identity } = await services.customerIdentities.createOrUpdate(a.accountId, {
        distinct_id: 'crm-42',
        email: 'jane@example.com',
        first_name: 'Jane',
        properties: { tier: 'gold' },
      });
      return {
        a,
        b,
        c,
        rulesOfA: rulesOfA.sort((x, y) => y - x),
        rulesOfB: rulesOfB.sort((x, y) => y - x),
        identityOfA: identity,
      };
    }));
    server = await servers.start({ DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' });
    store = openStore(database.url);
    snapshotOfA = await rowsOf(store, a.accountId);
  });
  afterAll(async () => {
    await store?.close();
    await servers.killAll();
    await database?.drop();
  });

  /** Every rule id of every page, following next_cursor from the first page. */
  async function allPages(token: string, limit: number): Promise<number[]> {
    const ids: number[] = [];
    let cursor = '';
    for (let page = 0; page < 50; page++) {
      const reply = await sendJson(
        server.url,
        'GET',
        `/v1/earning_rules?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
        token,
      );
      expect(reply.status).toBe(200);
      ids.push(...reply.json.earning_rules.map((r: { id: number }) => r.id));
      cursor = reply.json.metadata.next_cursor;
      if (cursor === '') return ids;
    }
    throw new Error('more than 50 pages');
  }

  for (const kind of ['apiKey', 'accessToken'] as const) {
    describe(`with B's ${kind === 'apiKey' ? 'API key' : 'access token'}`, () => {
      it("reads B's referral settings, never A's; C (none set up) gets 404", async () => {
        const reply = await sendJson(server.url, 'GET', '/v1/referral_settings', b[kind]);
        expect(reply.status).toBe(200);
        expect(reply.json).toEqual({ referral_settings: settingsOfB });
        const none = await sendJson(server.url, 'GET', '/v1/referral_settings', c[kind]);
        expect(checkContractError(none)).toBe('not_found');
        expect(none.body).not.toContain(referralSettingsFixture.sender_reward.name);
      });

      it("pages through B's enabled rules only, at every page size; C's list is empty", async () => {
        // A's rules are there to leak: interleaved with B's, and A sees them.
        expect(await allPages(a[kind], 2)).toEqual(rulesOfA);
        for (const limit of [1, 2, 3, 250]) expect(await allPages(b[kind], limit)).toEqual(rulesOfB);
        const empty = await sendJson(server.url, 'GET', '/v1/earning_rules', c[kind]);
        expect(empty.json).toEqual({ earning_rules: [], metadata: { next_cursor: '', previous_cursor: '' } });
      });

      it("refuses A's cursors (next and previous) with 400 invalid_cursor, and A refuses B's", async () => {
        const first = await sendJson(server.url, 'GET', '/v1/earning_rules?limit=2', a[kind]);
        const next = first.json.metadata.next_cursor as string;
        const second = await sendJson(server.url, 'GET', `/v1/earning_rules?limit=2&cursor=${next}`, a[kind]);
        const previous = second.json.metadata.previous_cursor as string;
        expect(next).not.toBe('');
        expect(previous).not.toBe('');
        for (const cursor of [next, previous]) {
          for (const token of [b[kind], c[kind]]) {
            const stolen = await sendJson(server.url, 'GET', `/v1/earning_rules?cursor=${cursor}`, token);
            expect(checkContractError(stolen)).toBe('invalid_cursor');
            expect(stolen.body).not.toMatch(/"id":/);
          }
        }
        const ofB = await sendJson(server.url, 'GET', '/v1/earning_rules?limit=1', b[kind]);
        const reverse = await sendJson(
          server.url,
          'GET',
          `/v1/earning_rules?cursor=${ofB.json.metadata.next_cursor}`,
          a[kind],
        );
        expect(checkContractError(reverse)).toBe('invalid_cursor');
      });
    });
  }

  it("refuses B's API key on create_or_update (403 oauth_token_required) and changes nothing", async () => {
    const reply = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, b.apiKey, {
      customer_identity: { distinct_id: 'crm-42', email: 'jane@example.com', first_name: 'Mallory' },
    });
    expect(checkContractError(reply)).toBe('oauth_token_required');
    expect(await rowsOf(store, a.accountId)).toBe(snapshotOfA);
    expect(await rowsOf(store, b.accountId)).not.toMatch(/Mallory/);
  });

  it("gives B its own identity and customer for A's distinct_id and email, leaving A's untouched", async () => {
    const identity = {
      distinct_id: 'crm-42',
      email: ' JANE@example.com ',
      first_name: 'Mallory',
      last_name: 'B',
      properties: { tier: null, stolen: true },
    };
    const created = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, b.accessToken, {
      customer_identity: identity,
    });
    expect(created.status).toBe(201);
    const mine = created.json.customer_identity;
    expect(mine).toMatchObject({ distinct_id: 'crm-42', first_name: 'Mallory', properties: { stolen: true } });
    expect(mine.id).not.toBe(identityOfA.id);
    expect(mine.customer_id).not.toBe(identityOfA.customer_id);

    // Again: B's own identity is updated (200), still not A's.
    const updated = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, b.accessToken, {
      customer_identity: { ...identity, first_name: 'Mallory again' },
    });
    expect(updated.status).toBe(200);
    expect(updated.json.customer_identity).toMatchObject({ id: mine.id, customer_id: mine.customer_id });

    // A's rows are exactly as they were; B's customer is B's.
    expect(await rowsOf(store, a.accountId)).toBe(snapshotOfA);
    const { rows } = await sql<{
      account_id: number;
    }>`select account_id from customers where id = ${mine.customer_id}`.execute(store.kysely);
    expect(rows.map((r) => Number(r.account_id))).toEqual([b.accountId]);

    // And A, asking again with its own token, still sees its own identity and customer.
    const again = await sendJson(server.url, 'POST', CREATE_OR_UPDATE, a.accessToken, {
      customer_identity: { distinct_id: 'crm-42', email: 'jane@example.com' },
    });
    expect(again.status).toBe(200);
    expect(again.json.customer_identity).toMatchObject({
      id: identityOfA.id,
      customer_id: identityOfA.customer_id,
      first_name: 'Jane',
      properties: { tier: 'gold' },
    });
  });
});
