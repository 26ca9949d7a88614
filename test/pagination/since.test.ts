import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CustomerFilters } from '../../src/customers/repository.js';
import { SINCE_FEW_ROWS, SINCE_PROBE_ROWS, SINCE_RANGE_ROWS, sincePlan } from '../../src/pagination/since.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { integersUpTo } from '../helpers/seed.js';

// A list filtered by updated_at_min reads its page through the time index or by walking ids
// (src/pagination/since.ts). Both plans must answer the same pages: here every page of times that
// match nothing, one row, a few, half the rows, more than SINCE_RANGE_ROWS and every row, forwards
// and back; and a time matching old rows only, which the walk would reach only after the new ones.

let t: TestApp;
let a: Tenant;
const ROWS = SINCE_RANGE_ROWS + 2_000;
const START = Date.UTC(2026, 0, 1);
/** The k-th seeded customer's (and their ledger entry's) updated_at: shuffled against id order. */
const updatedAt = (k: number) => START + ((k * 7919) % ROWS) * 1000;

beforeAll(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  const numbers = integersUpTo(t.db.dialect, ROWS);
  await sql`insert into customers (account_id, email, email_normalized, created_at, updated_at)
    select ${a.accountId}, 'c' || i || '@example.com', 'c' || i || '@example.com', ${sql.lit(START)},
      ${sql.lit(START)} + ((i * 7919) % ${sql.lit(ROWS)}) * 1000
    from (${numbers}) as numbers`.execute(t.db.kysely);
  await sql`insert into points_transactions
      (account_id, customer_id, points_change, description, occurred_at, created_at, updated_at)
    select account_id, id, 5, 'seed', updated_at, updated_at, updated_at from customers where account_id = ${a.accountId}`.execute(
    t.db.kysely,
  );
}, 120_000);
afterAll(async () => t?.close());

/** Every id the list shows for `path`, page after page (limit 250), then back from the last page. */
async function walkPages(path: string, tenant = a): Promise<{ forwards: number[]; backwards: number[] }> {
  const get = async (url: string) => {
    const response = await t.app.inject({ method: 'GET', url, headers: bearer(tenant.apiKey) });
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const key = path.split('?')[0]!.split('/').pop()!;
  const forwards: number[] = [];
  const pages: string[] = [];
  let page = await get(`${path}&limit=250`);
  for (;;) {
    forwards.push(...page[key].map((row: { id: number }) => row.id));
    if (!page.metadata.next_cursor) break;
    pages.push(page.metadata.next_cursor);
    page = await get(`${path}&limit=250&cursor=${page.metadata.next_cursor}`);
  }
  const backwards: number[] = [];
  for (;;) {
    backwards.unshift(...page[key].map((row: { id: number }) => row.id));
    if (!page.metadata.previous_cursor) break;
    page = await get(`${path}&limit=250&cursor=${page.metadata.previous_cursor}`);
  }
  return { forwards, backwards };
}

describe('a list filtered by updated_at_min, on both of its plans', () => {
  it('answers the same pages whatever the time matches', async () => {
    const customers = await t.db.kysely
      .selectFrom('customers')
      .select(['id', 'updated_at'])
      .where('account_id', '=', a.accountId)
      .orderBy('id', 'desc')
      .execute();
    const newest = Math.max(...customers.map((row) => Number(row.updated_at)));
    const times = {
      none: newest + 1000,
      one: newest,
      few: updatedAt(0) + (ROWS - 300) * 1000,
      half: START + (ROWS / 2) * 1000,
      many: START + 1_000 * 1000,
      all: 0,
    };
    const expected = { none: 0, one: 1, few: 300, half: ROWS / 2, many: ROWS - 1_000, all: ROWS };
    for (const [match, time] of Object.entries(times) as [keyof typeof times, number][]) {
      const ids = customers.filter((row) => Number(row.updated_at) >= time).map((row) => row.id);
      expect(ids.length).toBe(expected[match]);
      const plan = await sincePlan(
        t.db.kysely,
        'customers',
        a.accountId,
        { updatedAtMin: time },
        { direction: 'next', boundary: null, rows: 51 },
      );
      // The times are spread evenly over ids: past SINCE_FEW_ROWS matches, a page of them lies
      // among the newest SINCE_PROBE_ROWS, and the walk is taken without counting further.
      if (t.db.dialect === 'postgres') expect(plan).toBe('planner');
      else expect({ match, plan }).toEqual({ match, plan: ids.length > SINCE_FEW_ROWS ? 'walk' : 'range' });
      for (const list of ['/v1/customers', '/v1/points_transactions']) {
        const { forwards, backwards } = await walkPages(`${list}?updated_at_min=${new Date(time).toISOString()}`);
        const want =
          list === '/v1/customers'
            ? ids
            : (
                await t.db.kysely
                  .selectFrom('points_transactions')
                  .select('id')
                  .where('account_id', '=', a.accountId)
                  .where('updated_at', '>=', time)
                  .orderBy('id', 'desc')
                  .execute()
              ).map((row) => row.id);
        expect({ match, list, forwards }).toEqual({ match, list, forwards: want });
        expect({ match, list, backwards }).toEqual({ match, list, backwards: want });
      }
    }
  }, 120_000);

  it('reads old rows a time matches through the time index, when the newest ids hold none of them', async () => {
    // More matches than SINCE_FEW_ROWS, all of them older than the newest SINCE_PROBE_ROWS ids:
    // a walk would read those first, so the count up to SINCE_RANGE_ROWS decides (the time index).
    const old = await createTenant(t.services);
    const matching = SINCE_FEW_ROWS + 500;
    const total = matching + SINCE_PROBE_ROWS + 500;
    const numbers = integersUpTo(t.db.dialect, total);
    await sql`insert into customers (account_id, email, email_normalized, created_at, updated_at)
      select ${old.accountId}, 'o' || i || '@example.com', 'o' || i || '@example.com', ${sql.lit(START)},
        case when i <= ${sql.lit(matching)} then ${sql.lit(START + 5000)} else ${sql.lit(START)} end
      from (${numbers}) as numbers order by i`.execute(t.db.kysely);
    const ids = (
      await t.db.kysely
        .selectFrom('customers')
        .select('id')
        .where('account_id', '=', old.accountId)
        .where('updated_at', '>=', START + 5000)
        .orderBy('id', 'desc')
        .execute()
    ).map((row) => row.id);
    expect(ids.length).toBe(matching);
    const plan = (boundary: number | null, state?: 'member') => {
      const filters: CustomerFilters = { updatedAtMin: START + 5000, state };
      return sincePlan(t.db.kysely, 'customers', old.accountId, filters, { direction: 'next', boundary, rows: 51 });
    };
    if (t.db.dialect === 'sqlite') {
      expect(await plan(null)).toBe('range');
      // From the newest match on, the matches are where the page starts: the walk.
      expect(await plan(ids[0]! + 1)).toBe('walk');
      // Unless the list has another condition (a state): the matches there say nothing of the
      // list's, and the count decides.
      expect(await plan(ids[0]! + 1, 'member')).toBe('range');
    }
    const { forwards, backwards } = await walkPages(
      `/v1/customers?updated_at_min=${new Date(START + 5000).toISOString()}`,
      old,
    );
    expect(forwards).toEqual(ids);
    expect(backwards).toEqual(ids);
  }, 120_000);
});
