import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EarningRulesPage, StoredEarningRule } from '../../src/earning-rules/schemas.js';
import { CursorCodec } from '../../src/pagination/cursor.js';
import { createServices } from '../../src/services.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

/** A minimal valid rule for the CLI input. */
const rule = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  image_url: 'https://cdn.example/rule.svg',
  reward: { type: 'points' },
  reward_value: { type: 'fixed', fixed: { value: 10 } },
  ...extra,
});

/** Creates `count` rules named r1…rN (ids ascending); `disabled` picks the ones created disabled. */
async function seedRules(
  t: TestApp,
  accountId: number,
  count: number,
  disabled: (i: number) => boolean = () => false,
): Promise<StoredEarningRule[]> {
  const input = Array.from({ length: count }, (_, i) => rule(`r${i + 1}`, { enabled: !disabled(i + 1) }));
  return (await t.services.earningRules.create(accountId, input)) as StoredEarningRule[];
}

describe('GET /v1/earning_rules', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  const get = (tenant: Tenant, query = '') =>
    t.app.inject({ method: 'GET', url: `/v1/earning_rules${query}`, headers: bearer(tenant.apiKey) });
  const page = async (tenant: Tenant, query = ''): Promise<EarningRulesPage> => {
    const response = await get(tenant, query);
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  };
  const ids = (p: EarningRulesPage) => p.earning_rules.map((r) => r.id);
  const cursorQuery = (cursor: string, limit?: number) =>
    `?cursor=${encodeURIComponent(cursor)}${limit === undefined ? '' : `&limit=${limit}`}`;

  describe('pages', () => {
    let a: Tenant;
    let enabled: number[]; // ids of the enabled rules, descending
    beforeAll(async () => {
      a = await createTenant(t.services, 'Pages');
      const created = await seedRules(t, a.accountId, 70, (i) => i % 5 === 0); // 56 enabled
      enabled = created
        .filter((r) => r.enabled)
        .map((r) => r.id)
        .reverse();
    });

    it('lists only enabled rules, id descending, 50 by default, for an API key and an access token', async () => {
      for (const token of [a.apiKey, a.accessToken]) {
        const response = await t.app.inject({ method: 'GET', url: '/v1/earning_rules', headers: bearer(token) });
        expect(response.statusCode).toBe(200);
        expect(response.headers['content-type']).toMatch(/^application\/json/);
        const body = response.json<EarningRulesPage>();
        expect(Object.keys(body)).toEqual(['earning_rules', 'metadata']);
        expect(ids(body)).toEqual(enabled.slice(0, 50));
        expect(body.metadata.previous_cursor).toBe('');
        expect(body.metadata.next_cursor).not.toBe('');
      }
    });

    it('pages forward with next_cursor and back with previous_cursor, always id descending', async () => {
      const first = await page(a, '?limit=20');
      expect(ids(first)).toEqual(enabled.slice(0, 20));
      expect(first.metadata.previous_cursor).toBe('');
      expect(first.metadata.next_cursor).not.toBe('');

      const second = await page(a, cursorQuery(first.metadata.next_cursor, 20));
      expect(ids(second)).toEqual(enabled.slice(20, 40));
      expect(second.metadata.previous_cursor).not.toBe('');

      const third = await page(a, cursorQuery(second.metadata.next_cursor, 20));
      expect(ids(third)).toEqual(enabled.slice(40, 56));
      expect(third.metadata.next_cursor).toBe('');

      const back = await page(a, cursorQuery(third.metadata.previous_cursor, 20));
      expect(ids(back)).toEqual(enabled.slice(20, 40));
      expect(back.metadata.next_cursor).not.toBe('');
      const forwardAgain = await page(a, cursorQuery(back.metadata.next_cursor, 20));
      expect(ids(forwardAgain)).toEqual(enabled.slice(40, 56));

      const start = await page(a, cursorQuery(back.metadata.previous_cursor, 20));
      expect(ids(start)).toEqual(enabled.slice(0, 20));
      expect(start.metadata.previous_cursor).toBe('');
      expect(start.metadata.next_cursor).not.toBe('');
    });

    it('takes a cursor with a different limit, and the default limit when none is given', async () => {
      const first = await page(a, '?limit=3');
      expect(ids(await page(a, cursorQuery(first.metadata.next_cursor, 7)))).toEqual(enabled.slice(3, 10));
      expect(ids(await page(a, cursorQuery(first.metadata.next_cursor)))).toEqual(enabled.slice(3, 53));
      const middle = await page(a, cursorQuery(first.metadata.next_cursor, 30));
      // Back from rules 3..33 with limit 2: the two rules just before, not page 1 of size 2.
      const back = await page(a, cursorQuery(middle.metadata.previous_cursor, 2));
      expect(ids(back)).toEqual(enabled.slice(1, 3));
      expect(back.metadata.previous_cursor).not.toBe('');
      expect(ids(await page(a, cursorQuery(back.metadata.previous_cursor, 2)))).toEqual(enabled.slice(0, 1));
    });

    it('accepts every limit from 1 to 250', async () => {
      for (const limit of [1, 2, 49, 50, 51, 249, 250]) {
        expect(ids(await page(a, `?limit=${limit}`))).toEqual(enabled.slice(0, limit));
      }
      expect(ids(await page(a, '?limit=007'))).toEqual(enabled.slice(0, 7));
    });

    it('refuses any other limit with 400 invalid_parameter naming limit, never clamping', async () => {
      const bad = ['0', '251', '-1', '1.5', 'abc', '', '1e2', '0x10', '%201', '99999999999', '1&limit=2', '2&limit=2'];
      for (const limit of bad) {
        const error = expectError(await get(a, `?limit=${limit}`), 'invalid_parameter');
        expect(error.details, `limit=${limit}`).toEqual([{ field: 'limit', message: expect.any(String) }]);
      }
      const withCursor = await page(a, '?limit=1');
      expectError(await get(a, `${cursorQuery(withCursor.metadata.next_cursor)}&limit=0`), 'invalid_parameter');
    });

    it('refuses unknown query parameters, naming them (issue 27: they were ignored)', async () => {
      const error = expectError(await get(a, '?limit=2&foo=bar'), 'invalid_parameter');
      expect(error.details).toEqual([{ field: 'foo', message: expect.any(String) }]);
    });
  });

  describe('cursors', () => {
    let a: Tenant;
    let b: Tenant;
    let next: string;
    beforeAll(async () => {
      a = await createTenant(t.services, 'Cursor A');
      b = await createTenant(t.services, 'Cursor B');
      await seedRules(t, a.accountId, 5);
      await seedRules(t, b.accountId, 5);
      next = (await page(a, '?limit=2')).metadata.next_cursor;
    });

    const expectInvalidCursor = async (cursor: string, tenant: Tenant = a) => {
      const response = await get(tenant, cursorQuery(cursor));
      expectError(response, 'invalid_cursor');
      return response;
    };

    it('is opaque URL-safe text', () => {
      expect(next).toMatch(/^[A-Za-z0-9_-]{20,200}$/);
    });

    it('refuses garbage', async () => {
      for (const garbage of ['x', 'not-a-cursor', '!!!!', '=====', 'a'.repeat(67), '€uro', 'a b', '%00']) {
        await expectInvalidCursor(garbage);
      }
    });

    it('refuses a truncated or extended cursor', async () => {
      await expectInvalidCursor(next.slice(0, -1));
      await expectInvalidCursor(next.slice(0, 10));
      await expectInvalidCursor(next.slice(1));
      await expectInvalidCursor(`${next}A`);
      await expectInvalidCursor(`${next}=`);
      await expectInvalidCursor(next + next);
      await expectInvalidCursor('A'.repeat(10_000));
    });

    it('refuses an altered payload: a flipped byte, or another id re-encoded without the MAC', async () => {
      const bytes = Buffer.from(next, 'base64url');
      for (let i = 0; i < bytes.length; i++) {
        const flipped = Buffer.from(bytes);
        flipped[i] = flipped[i]! ^ 0x01;
        await expectInvalidCursor(flipped.toString('base64url'));
      }
      // Move the boundary to id 1 000 000 and keep the old MAC: the payload no longer matches it.
      const moved = Buffer.from(bytes);
      moved.writeBigUInt64BE(1_000_000n, 10);
      await expectInvalidCursor(moved.toString('base64url'));
      // Point the cursor at account B, keeping the MAC.
      const rehomed = Buffer.from(bytes);
      rehomed.writeBigUInt64BE(BigInt(b.accountId), 2);
      await expectInvalidCursor(rehomed.toString('base64url'), b);
      // The same bytes spelt with different spare bits in the last character.
      const last = next.at(-1)!;
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const sibling = alphabet[alphabet.indexOf(last) ^ 1]!;
      await expectInvalidCursor(next.slice(0, -1) + sibling);
    });

    it("refuses a valid cursor of another account, both ways (A's cursor with B's credential)", async () => {
      const response = await expectInvalidCursor(next, b);
      expect(response.json().error.message).toMatch(/another account/);
      const bNext = (await page(b, '?limit=2')).metadata.next_cursor;
      await expectInvalidCursor(bNext, a);
      expect((await page(a, cursorQuery(next))).earning_rules).toHaveLength(3);
    });

    it('refuses an empty cursor: "" in metadata means "no such page", never "page 1 again"', async () => {
      const response = await expectInvalidCursor('');
      expect(response.json().error.message).toMatch(/empty/);
      expectError(await get(a, '?cursor'), 'invalid_cursor');
    });

    it('refuses a cursor given twice as invalid_parameter (not a string)', async () => {
      const error = expectError(await get(a, `?cursor=${next}&cursor=${next}`), 'invalid_parameter');
      expect(error.details[0].field).toBe('cursor');
    });

    it('refuses a cursor signed with another key (another deployment)', async () => {
      const forged = new CursorCodec(randomBytes(32)).encode({
        accountId: a.accountId,
        direction: 'next',
        boundary: 3,
      });
      await expectInvalidCursor(forged);
    });

    it('stays valid across processes: every service on the database shares one stored key', async () => {
      const fresh = () => createServices(t.db, { clock: t.clock, accessTokenTtlSeconds: 60 }).earningRules;
      const [one, two] = [fresh(), fresh()];
      const [p1, p2] = await Promise.all([one.list(a.accountId, { limit: 1 }), two.list(a.accountId, { limit: 1 })]);
      expect(p1.metadata.next_cursor).toBe(p2.metadata.next_cursor);
      expect(p1.metadata.next_cursor).toBe((await page(a, '?limit=1')).metadata.next_cursor);
      const restarted = fresh();
      expect((await restarted.list(a.accountId, { cursor: next, limit: 1 })).earning_rules).toHaveLength(1);
    });
  });

  describe('edges', () => {
    it('answers an account without rules with an empty page and no cursors', async () => {
      const a = await createTenant(t.services, 'Empty');
      await seedRules(t, a.accountId, 3, () => true);
      expect(await page(a)).toEqual({ earning_rules: [], metadata: { next_cursor: '', previous_cursor: '' } });
    });

    it('gives no next cursor when the page ends exactly at the last rule', async () => {
      const a = await createTenant(t.services, 'Exact');
      await seedRules(t, a.accountId, 4);
      const first = await page(a, '?limit=2');
      const second = await page(a, cursorQuery(first.metadata.next_cursor, 2));
      expect(second.earning_rules).toHaveLength(2);
      expect(second.metadata.next_cursor).toBe('');
      expect(second.metadata.previous_cursor).not.toBe('');
    });

    it('exact previous_cursor after newer rules vanish, and an empty page that still leads back', async () => {
      const a = await createTenant(t.services, 'Vanishing');
      const rules = await seedRules(t, a.accountId, 6); // ids ascending r1..r6
      const byName = (n: number) => rules[n - 1]!.id;
      const first = await page(a, '?limit=2'); // r6 r5
      const second = await page(a, cursorQuery(first.metadata.next_cursor, 2)); // r4 r3
      expect(ids(second)).toEqual([byName(4), byName(3)]);

      // r6 and r5 go away: the page before r4 no longer exists.
      await t.services.earningRules.delete(byName(6));
      await t.services.earningRules.setEnabled(byName(5), false);
      const again = await page(a, cursorQuery(first.metadata.next_cursor, 2));
      expect(ids(again)).toEqual([byName(4), byName(3)]);
      expect(again.metadata.previous_cursor).toBe('');

      // Going back from r4..r3 now finds nothing newer: an empty page with no previous, whose
      // next cursor leads to r4 again (not past it).
      const empty = await page(a, cursorQuery(second.metadata.previous_cursor, 2));
      expect(empty.earning_rules).toEqual([]);
      expect(empty.metadata.previous_cursor).toBe('');
      expect(ids(await page(a, cursorQuery(empty.metadata.next_cursor, 2)))).toEqual([byName(4), byName(3)]);

      // Everything older than a next cursor goes away: an empty page whose previous cursor leads back.
      const third = await page(a, cursorQuery(second.metadata.next_cursor, 2)); // r2 r1
      expect(third.metadata.next_cursor).toBe('');
      for (const n of [4, 3, 2, 1]) await t.services.earningRules.setEnabled(byName(n), false);
      const gone = await page(a, cursorQuery(second.metadata.next_cursor, 2));
      expect(gone).toEqual({ earning_rules: [], metadata: { next_cursor: '', previous_cursor: '' } });
      await t.services.earningRules.setEnabled(byName(3), true);
      const lonely = await page(a, cursorQuery(second.metadata.next_cursor, 2));
      expect(lonely.earning_rules).toEqual([]);
      expect(lonely.metadata.next_cursor).toBe('');
      expect(ids(await page(a, cursorQuery(lonely.metadata.previous_cursor, 2)))).toEqual([byName(3)]);
    });

    it('next_cursor of a previous page is exact: "" once nothing older remains', async () => {
      const a = await createTenant(t.services, 'Older');
      const rules = await seedRules(t, a.accountId, 4);
      const first = await page(a, '?limit=2');
      const second = await page(a, cursorQuery(first.metadata.next_cursor, 2));
      for (const r of rules.slice(0, 2)) await t.services.earningRules.delete(r.id);
      const back = await page(a, cursorQuery(second.metadata.previous_cursor, 2));
      expect(ids(back)).toEqual([rules[3]!.id, rules[2]!.id]);
      expect(back.metadata).toEqual({ next_cursor: '', previous_cursor: '' });
    });
  });

  it('is in the OpenAPI document with its parameters, responses and tag', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    const operation = doc.paths['/v1/earning_rules'].get;
    expect(operation).toMatchObject({
      operationId: 'listEarningRules',
      tags: ['Earning rules'],
      security: [{ bearerAuth: ['earning_rule:read'] }, { oauth2: ['earning_rule:read'] }],
    });
    expect(operation.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['cursor', 'limit']);
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '401', '403', '429', '500', '503']);
  });
});

describeAuthSuite('GET /v1/earning_rules', {
  successStatus: 200,
  request: () => ({ method: 'GET', url: '/v1/earning_rules' }),
  scope: 'earning_rule:read',
  seed: async (t, a) => {
    await t.services.earningRules.create(a.accountId, [rule('A1'), rule('A2')]);
  },
  expectIsolated: (response: LightMyRequestResponse) => {
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ earning_rules: [], metadata: { next_cursor: '', previous_cursor: '' } });
  },
});
