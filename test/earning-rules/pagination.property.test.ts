import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EarningRulesPage, StoredEarningRule } from '../../src/earning-rules/schemas.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

// Property runs share one app (one database); each run gets an account of its own, so runs
// cannot see each other's rules. Runs stay bounded so the suite stays fast on both engines.
const NUM_RUNS = Number(process.env.PROPERTY_RUNS ?? 60);

const rule = (i: number, enabled: boolean) => ({
  name: `rule ${i}`,
  image_url: 'https://cdn.example/r.svg',
  reward: { type: 'points' },
  reward_value: { type: 'fixed', fixed: { value: 1 } },
  enabled,
});

/** Mostly small limits (many pages), sometimes large ones, up to the maximum. */
const limitArb = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 12 }) },
  { weight: 2, arbitrary: fc.integer({ min: 13, max: 60 }) },
  { weight: 1, arbitrary: fc.integer({ min: 61, max: 250 }) },
);
/**
 * Which rules are enabled: 0 to 120 rules (uniformly: fast-check's default size would keep arrays
 * short), with a share of enabled ones from none to all.
 */
const flagsArb = fc
  .record({ size: fc.integer({ min: 0, max: 120 }), share: fc.integer({ min: 0, max: 10 }) })
  .chain(({ size, share }) =>
    fc
      .array(fc.integer({ min: 0, max: 9 }), { minLength: size, maxLength: size })
      .map((xs) => xs.map((x) => x < share)),
  );

type Mutation = { kind: 'insert'; enabled: boolean } | { kind: 'delete' | 'disable' | 'enable'; pick: number };
const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), enabled: fc.boolean() }),
  fc.record({ kind: fc.constantFrom('delete' as const, 'disable' as const, 'enable' as const), pick: fc.nat() }),
);
/** What changes before each page request: usually something, up to five changes. */
const stepArb = fc.record({ limit: limitArb, mutations: fc.array(mutationArb, { maxLength: 5 }) });

describe('GET /v1/earning_rules: keyset pages against a model', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  /** A new account and a read key for it, with `flags.length` rules (ids ascending). */
  async function freshAccount(flags: boolean[]): Promise<{ accountId: number; key: string; ids: number[] }> {
    const account = await t.services.accounts.create('Property shop');
    const key = await t.services.auth.createApiKey(account.id, 'earning_rule:read');
    const created = (await t.services.earningRules.create(
      account.id,
      flags.map((enabled, i) => rule(i, enabled)),
    )) as StoredEarningRule[];
    return { accountId: account.id, key: key.key, ids: created.map((r) => r.id) };
  }

  async function get(key: string, limit: number, cursor?: string): Promise<EarningRulesPage> {
    const query = `?limit=${limit}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const response = await t.app.inject({ method: 'GET', url: `/v1/earning_rules${query}`, headers: bearer(key) });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }
  const idsOf = (page: EarningRulesPage) => page.earning_rules.map((r) => r.id);

  it('walking forward to the end and back to the start gives the model pages: enabled, id desc, sliced', {
    timeout: 180_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(flagsArb, limitArb, limitArb, async (flags, limit, backLimit) => {
        const { key, ids } = await freshAccount(flags);
        const model = ids.filter((_, i) => flags[i]).reverse(); // enabled, id descending

        // Forward with one limit: page k is model[k*limit, (k+1)*limit).
        const pages: EarningRulesPage[] = [await get(key, limit)];
        while (pages.at(-1)!.metadata.next_cursor !== '') {
          expect(pages.length).toBeLessThanOrEqual(model.length);
          pages.push(await get(key, limit, pages.at(-1)!.metadata.next_cursor));
        }
        expect(pages).toHaveLength(Math.max(1, Math.ceil(model.length / limit)));
        pages.forEach((page, k) => {
          expect(idsOf(page)).toEqual(model.slice(k * limit, (k + 1) * limit));
          expect(page.metadata.previous_cursor === '').toBe(k === 0);
        });
        expect(pages.flatMap(idsOf)).toEqual(model);

        // Back from the last page with another limit: each page is the `backLimit` rules just
        // newer than the page before it, still id descending, until the newest rule.
        let current = pages.at(-1)!;
        let steps = 0;
        while (current.metadata.previous_cursor !== '') {
          expect(++steps).toBeLessThanOrEqual(model.length);
          const first = current.earning_rules[0]!.id;
          const page = await get(key, backLimit, current.metadata.previous_cursor);
          const newer = model.filter((id) => id > first);
          expect(idsOf(page)).toEqual(newer.slice(-backLimit));
          expect(page.metadata.previous_cursor === '').toBe(newer.length <= backLimit);
          expect(page.metadata.next_cursor).not.toBe('');
          current = page;
        }
        expect(current.earning_rules[0]?.id).toBe(model[0]);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('with rules created, deleted, disabled and enabled between requests, no rule present throughout is repeated or skipped', {
    timeout: 180_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(
        flagsArb,
        limitArb,
        fc.array(stepArb, { minLength: 1, maxLength: 40, size: 'max' }),
        async (flags, firstLimit, steps) => {
          const { accountId, key, ids } = await freshAccount(flags);
          const enabled = new Map(ids.map((id, i) => [id, flags[i]!]));
          let touched = new Set<number>();
          let stepIndex = 0;
          // Before each request after the first: the next step's changes, and its limit. The
          // steps run out (then nothing changes), so a walk must end: bounded by every id.
          const mutate = async (): Promise<number> => {
            const step = steps[stepIndex++];
            if (!step) return firstLimit;
            for (const m of step.mutations) await apply(accountId, m, enabled, touched);
            return step.limit;
          };
          const maxRequests = ids.length + 5 * steps.length + 2;
          const stable = () => [...enabled].filter(([id, on]) => on && !touched.has(id)).map(([id]) => id);

          // Forward: ids strictly descending across all pages, every stable rule seen.
          const mustSee = new Set(stable());
          let page = await get(key, firstLimit);
          const seen = [...idsOf(page)];
          let requests = 1;
          while (page.metadata.next_cursor !== '') {
            expect(++requests).toBeLessThanOrEqual(maxRequests);
            page = await get(key, await mutate(), page.metadata.next_cursor);
            seen.push(...idsOf(page));
          }
          expectStrictlyDescending(seen);
          for (const id of mustSee) if (!touched.has(id)) expect(seen).toContain(id);

          // Backward from the last page: ids strictly ascending page after page.
          touched = new Set();
          const mustSeeBack = new Set(stable().filter((id) => id >= (page.earning_rules[0]?.id ?? 0)));
          const back = [...idsOf(page)];
          requests = 1;
          while (page.metadata.previous_cursor !== '') {
            expect(++requests).toBeLessThanOrEqual(maxRequests);
            page = await get(key, await mutate(), page.metadata.previous_cursor);
            back.unshift(...idsOf(page));
          }
          expectStrictlyDescending(back);
          for (const id of mustSeeBack) if (!touched.has(id)) expect(back).toContain(id);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('a random walk both ways, with changes between requests, returns exactly the rules beside the page before', {
    timeout: 180_000,
  }, async () => {
    // Besides random changes, sometimes every rule on one side of the page goes: the edges (an
    // empty page, a cursor that must become "") only show up then.
    const walkStepArb = fc.record({
      forward: fc.boolean(),
      limit: limitArb,
      mutations: fc.array(mutationArb, { maxLength: 4 }),
      clear: fc.option(fc.constantFrom('newer' as const, 'older' as const), { freq: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(
        flagsArb,
        limitArb,
        fc.array(walkStepArb, { minLength: 1, maxLength: 30, size: 'max' }),
        async (flags, firstLimit, steps) => {
          const { accountId, key, ids } = await freshAccount(flags);
          const enabled = new Map(ids.map((id, i) => [id, flags[i]!]));
          const touched = new Set<number>();
          const listed = () =>
            [...enabled]
              .filter(([, on]) => on)
              .map(([id]) => id)
              .sort((a, b) => b - a);

          // Deletes or disables (alternately) every rule of the account that `side` picks.
          const clearSide = async (accountId: number, side: (id: number) => boolean) => {
            for (const [n, id] of [...enabled.keys()].filter(side).entries()) {
              const kind = n % 2 ? 'delete' : 'disable';
              await apply(accountId, { kind, pick: [...enabled.keys()].indexOf(id) }, enabled, touched);
            }
          };

          let page = await get(key, firstLimit);
          expect(idsOf(page)).toEqual(listed().slice(0, firstLimit));
          expect(page.metadata.previous_cursor).toBe('');
          // The page's place on the id line: its next cursor reads ids < lo, its previous
          // cursor ids > hi. An empty page sits just beyond the boundary it was read from.
          let lo = page.earning_rules.at(-1)?.id ?? 0;
          let hi = page.earning_rules[0]?.id ?? 0;
          for (const step of steps) {
            const { next_cursor: next, previous_cursor: previous } = page.metadata;
            const forward = step.forward ? next !== '' : previous === '';
            const cursor = forward ? next : previous;
            if (cursor === '') break;
            for (const m of step.mutations) await apply(accountId, m, enabled, touched);
            if (step.clear) await clearSide(accountId, step.clear === 'newer' ? (id) => id > hi : (id) => id < lo);
            const boundary = forward ? lo : hi;

            page = await get(key, step.limit, cursor);
            const all = listed();
            const expected = forward
              ? all.filter((id) => id < boundary).slice(0, step.limit)
              : all.filter((id) => id > boundary).slice(-step.limit);
            expect(idsOf(page)).toEqual(expected);
            const first = page.earning_rules[0];
            const last = page.earning_rules.at(-1);
            lo = last ? last.id : forward ? boundary : boundary + 1;
            hi = first ? first.id : forward ? boundary - 1 : boundary;
            expect(page.metadata.next_cursor !== '').toBe(all.some((id) => id < lo));
            expect(page.metadata.previous_cursor !== '').toBe(all.some((id) => id > hi));
          }
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  /** Applies one change through the services, recording which rules it touched. */
  async function apply(accountId: number, m: Mutation, enabled: Map<number, boolean>, touched: Set<number>) {
    if (m.kind === 'insert') {
      const created = (await t.services.earningRules.create(accountId, rule(0, m.enabled))) as StoredEarningRule;
      enabled.set(created.id, m.enabled);
      touched.add(created.id);
      return;
    }
    const existing = [...enabled.keys()];
    if (existing.length === 0) return;
    const id = existing[m.pick % existing.length]!;
    touched.add(id);
    if (m.kind === 'delete') {
      await t.services.earningRules.delete(id);
      enabled.delete(id);
    } else {
      await t.services.earningRules.setEnabled(id, m.kind === 'enable');
      enabled.set(id, m.kind === 'enable');
    }
  }
});

function expectStrictlyDescending(ids: number[]): void {
  for (let i = 1; i < ids.length; i++) expect(ids[i]!, `ids ${ids.join(',')}`).toBeLessThan(ids[i - 1]!);
}
