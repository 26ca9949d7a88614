import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageQuery } from '../../src/earning-rules/repository.js';
import type { Direction } from '../../src/pagination/cursor.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

// The page query must stay a range read of the `earning_rules_page` index (account_id, enabled,
// id): no scan of the table, no sort, no OFFSET, so page 100 costs what page 1 does. These tests
// explain the exact SQL the repository issues (pageQuery is what findPage runs), on many
// accounts' interleaved rules.
//
// The planners run without table statistics, as SQLite does in production (nothing runs ANALYZE)
// and so that PostgreSQL's choice cannot change under the test (autovacuum is off for the table).
// With statistics on a table this small, a planner may rightly prefer walking the primary key and
// filtering (a few hundred rows either way); the point here is that the query's shape lets the
// index serve it, so a change to that shape (an OFFSET, an order on another column, a function
// around id, a lost predicate) fails.

const rule = (i: number) => ({
  name: `r${i}`,
  image_url: 'https://cdn.example/r.svg',
  reward: { type: 'points' },
  reward_value: { type: 'fixed', fixed: { value: 1 } },
  enabled: i % 7 !== 0,
});

type Shape = { direction: Direction; boundary: 'none' | 'inside' | 'below' | 'above'; rows: number };
const shapes: Shape[] = (['next', 'previous'] as const).flatMap((direction) =>
  (['inside', 'below', 'above'] as const).flatMap((boundary) => [51, 1].map((rows) => ({ direction, boundary, rows }))),
);
shapes.unshift({ direction: 'next', boundary: 'none', rows: 51 });

describe('the earning-rules page query plan', () => {
  let t: TestApp;
  // One account's 200 rules among 50 other accounts' 2,500; boundaries inside its id range and
  // beyond it on either side, where walking the primary key would read only other accounts' rules.
  let accountId: number;
  let ids: { inside: number; below: number; above: number };
  beforeAll(async () => {
    t = await createTestApp();
    if (t.db.dialect === 'postgres') {
      await sql`alter table earning_rules set (autovacuum_enabled = false)`.execute(t.db.kysely);
    }
    accountId = (await t.services.accounts.create('Target')).id;
    const others: number[] = [];
    for (let i = 0; i < 50; i++) others.push((await t.services.accounts.create(`Other ${i}`)).id);
    // Rounds interleave the accounts' ids, as rules created over time do.
    for (let round = 0; round < 10; round++) {
      await t.services.earningRules.create(
        accountId,
        Array.from({ length: 20 }, (_, i) => rule(i)),
      );
      for (const other of others) {
        await t.services.earningRules.create(
          other,
          Array.from({ length: 5 }, (_, i) => rule(i)),
        );
      }
    }
    const mine = await t.services.earningRules.listAll(accountId, true);
    ids = {
      inside: mine[Math.floor(mine.length / 2)]!.id,
      below: mine.at(-1)!.id - 1,
      above: mine[0]!.id + 1,
    };
  });
  afterAll(async () => t.close());

  it.each(shapes)('$direction, boundary $boundary, $rows rows: an index range, no sort, no OFFSET', async (shape) => {
    const boundary = shape.boundary === 'none' ? null : ids[shape.boundary];
    const compiled = pageQuery(t.db.kysely, accountId, shape.direction, boundary, shape.rows).compile();
    expect(compiled.sql).not.toMatch(/\boffset\b|\bcount\s*\(/i);
    expect(compiled.sql).toMatch(/\blimit\b/i);

    if (t.db.dialect === 'sqlite') {
      const plan = await explainSqlite(t, compiled);
      expect(plan, plan).toMatch(
        /SEARCH earning_rules USING (COVERING )?INDEX earning_rules_page \(account_id=\? AND enabled=\?/,
      );
      if (boundary !== null) expect(plan).toMatch(/AND id[<>]\?\)/);
      expect(plan).not.toMatch(/SCAN earning_rules/);
      expect(plan).not.toMatch(/TEMP B-TREE/);
    } else {
      const plan = await explainPostgres(t, compiled);
      expect(plan, plan).toMatch(/Index (Only )?Scan( Backward)? using earning_rules_page on earning_rules/);
      if (boundary !== null) expect(plan).toMatch(/Index Cond: .*\(id [<>] /);
      expect(plan).not.toMatch(/Seq Scan|Sort|Bitmap|Filter/);
    }
  });
});

async function explainSqlite(t: TestApp, query: CompiledQuery): Promise<string> {
  const result = await t.db.kysely.executeQuery<{ detail: string }>(
    CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
  );
  return result.rows.map((row) => row.detail).join('\n');
}

async function explainPostgres(t: TestApp, query: CompiledQuery): Promise<string> {
  const result = await t.db.kysely.executeQuery<{ 'QUERY PLAN': string }>(
    CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]),
  );
  return result.rows.map((row) => row['QUERY PLAN']).join('\n');
}
