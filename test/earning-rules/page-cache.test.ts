import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { PageCache } from '../../src/http/page-cache.js';
import { createServices } from '../../src/services.js';
import { openDb } from '../../src/storage/db.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { changeReaching } from '../helpers/changes.js';
import { earningRuleFixture as rule } from '../helpers/fixtures.js';

describe('PageCache', () => {
  it('serves a page only at the version it was stored with', () => {
    const cache = new PageCache(1000);
    cache.set('a', 1, 'page-a');
    expect(cache.get('a', 1)).toBe('page-a');
    expect(cache.get('a', 2)).toBeUndefined();
    expect(cache.get('a', 1)).toBeUndefined();
  });

  it('drops the least recently used pages past its byte budget', () => {
    const cache = new PageCache(10);
    cache.set('a', 1, 'aaaa');
    cache.set('b', 1, 'bbbb');
    expect(cache.get('a', 1)).toBe('aaaa');
    cache.set('c', 1, 'cccc');
    expect(cache.get('b', 1)).toBeUndefined();
    expect(cache.get('a', 1)).toBe('aaaa');
    expect(cache.get('c', 1)).toBe('cccc');
    cache.set('huge', 1, 'x'.repeat(11));
    expect(cache.get('huge', 1)).toBeUndefined();
  });
});

// Another process (a second server, or the CLI) changes the rules through its own connection:
// the page a server has cached must not outlive the change.
describe('GET /v1/earning_rules after a change made elsewhere', () => {
  let t: TestApp;
  let a: Tenant;
  beforeEach(async () => {
    t = await createTestApp();
    a = await createTenant(t.services);
  });
  afterEach(async () => t.close());

  const names = async () =>
    (await t.app.inject({ method: 'GET', url: '/v1/earning_rules?limit=10', headers: bearer(a.apiKey) }))
      .json()
      .earning_rules.map((r: { name: string }) => r.name);

  it('shows every create, disable, enable and delete as soon as it is notified', async () => {
    const created = (await t.services.earningRules.create(a.accountId, [rule('one'), rule('two')])) as { id: number }[];
    expect(await names()).toEqual(['two', 'one']);
    expect(await names()).toEqual(['two', 'one']);

    const other = openDb(t.url);
    try {
      const elsewhere = createServices(other, { clock: systemClock, accessTokenTtlSeconds: 60 });
      // On PostgreSQL the version is kept in memory until the change's notification arrives.
      const change = <T>(write: () => Promise<T>) => changeReaching(t.db, a.accountId, write);
      await change(() => elsewhere.earningRules.create(a.accountId, rule('three')));
      expect(await names()).toEqual(['three', 'two', 'one']);
      await change(() => elsewhere.earningRules.setEnabled(created[1]!.id, false));
      expect(await names()).toEqual(['three', 'one']);
      await change(() => elsewhere.earningRules.setEnabled(created[1]!.id, true));
      expect(await names()).toEqual(['three', 'two', 'one']);
      await change(() => elsewhere.earningRules.delete(created[0]!.id));
      expect(await names()).toEqual(['three', 'two']);
    } finally {
      await other.close();
    }
  });
});
