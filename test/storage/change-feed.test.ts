import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { VersionedPages } from '../../src/http/page-cache.js';
import { createServices, type Services } from '../../src/services.js';
import { AccountCache, type ChangeFeed, FEED_APPLICATION_NAME } from '../../src/storage/change-feed.js';
import { type Db, openDb } from '../../src/storage/db.js';
import { createTenant, createTestDb, type Tenant, type TestDb, testEngine } from '../helpers/app.js';
import { earningRuleFixture, referralSettingsFixture } from '../helpers/fixtures.js';
import { eventually } from '../helpers/wait.js';

// The caches of referral settings and earning-rules versions on PostgreSQL: values kept in one
// process are forgotten when any other connection commits a change (LISTEN/NOTIFY), never kept
// while changes could be missed, and the feed comes back by itself after losing its connection.

const inactive = { ...referralSettingsFixture, status: 'inactive' };

describe.skipIf(testEngine !== 'postgres')('ChangeFeed and AccountCache on PostgreSQL', () => {
  let test: TestDb;
  let feed: ChangeFeed;
  let tenant: Tenant;
  // Another process: its own pool, as a second server or the CLI would have.
  let other: Db;
  let elsewhere: Services;

  beforeEach(async () => {
    test = await createTestDb();
    feed = test.db.changes as ChangeFeed;
    const services = createServices(test.db, { clock: systemClock, accessTokenTtlSeconds: 60 });
    tenant = await createTenant(services);
    other = openDb(test.url);
    elsewhere = createServices(other, { clock: systemClock, accessTokenTtlSeconds: 60 });
    await elsewhere.referralSettings.set(tenant.accountId, referralSettingsFixture);
  });
  afterEach(async () => {
    await other.close();
    await test.destroy();
  });

  const untilLive = async () => expect(await eventually(async () => feed.isLive(), 10_000)).toBe(true);

  /** Resolves with the next change the feed delivers for the tenant. */
  const nextChange = () =>
    new Promise<string>((resolve) => {
      const stop = feed.onChange((kind, accountId) => {
        if (accountId !== tenant.accountId) return;
        stop();
        resolve(kind);
      });
    });

  /** An AccountCache of the tenant's referral-settings status that counts its loads. */
  function statusCache() {
    const cache = new AccountCache<string>(feed, 'referral_settings', 60_000);
    const counter = { loads: 0 };
    const status = () =>
      cache.get(tenant.accountId, async () => {
        counter.loads++;
        return (await elsewhere.referralSettings.get(tenant.accountId)).status;
      });
    return { cache, counter, status };
  }

  it('keeps a value while nothing changes, and forgets it when another connection changes it', async () => {
    await untilLive();
    const { counter, status } = statusCache();
    expect(await status()).toBe('active');
    expect(await status()).toBe('active');
    expect(counter.loads).toBe(1);

    const change = nextChange();
    await elsewhere.referralSettings.set(tenant.accountId, inactive);
    expect(await change).toBe('referral_settings');
    expect(await status()).toBe('inactive');
    expect(counter.loads).toBe(2);
  });

  it('notifies earning-rules changes made by any write path, including plain SQL', async () => {
    await untilLive();
    const viaService = nextChange();
    await elsewhere.earningRules.create(tenant.accountId, earningRuleFixture('Sign up'));
    expect(await viaService).toBe('earning_rules');

    const viaSql = nextChange();
    await sql`delete from referral_settings where account_id = ${tenant.accountId}`.execute(other.kysely);
    expect(await viaSql).toBe('referral_settings');
  });

  it('does not keep a value loaded while a change arrived', async () => {
    await untilLive();
    const cache = new AccountCache<string>(feed, 'referral_settings', 60_000);
    let loads = 0;
    let release: () => void = () => {};
    const slowLoad = async () => {
      loads++;
      const before = (await elsewhere.referralSettings.get(tenant.accountId)).status;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return before;
    };
    const pending = cache.get(tenant.accountId, slowLoad);
    const change = nextChange();
    await elsewhere.referralSettings.set(tenant.accountId, inactive);
    await change;
    release();
    expect(await pending).toBe('active'); // read before the change: served once, not kept
    const fresh = async () => {
      loads++;
      return (await elsewhere.referralSettings.get(tenant.accountId)).status;
    };
    expect(await cache.get(tenant.accountId, fresh)).toBe('inactive');
    expect(loads).toBe(2);
  });

  it('stops caching when its connection is lost, and listens again by itself', async () => {
    await untilLive();
    const { counter, status } = statusCache();
    await status();
    await status();
    expect(counter.loads).toBe(1);

    const { rows } = await sql<{ ended: boolean }>`
      select pg_terminate_backend(pid) as ended from pg_stat_activity
      where application_name = ${FEED_APPLICATION_NAME} and pid <> pg_backend_pid()
        and query ilike 'listen%' and backend_type = 'client backend'`.execute(other.kysely);
    expect(rows.some((row) => row.ended)).toBe(true);
    expect(await eventually(async () => !feed.isLive(), 5000)).toBe(true);

    // While down, nothing is kept: a change is seen at once, with no notification to carry it.
    await sql`alter table referral_settings disable trigger referral_settings_changed`.execute(other.kysely);
    await elsewhere.referralSettings.set(tenant.accountId, inactive);
    await sql`alter table referral_settings enable trigger referral_settings_changed`.execute(other.kysely);
    expect(await status()).toBe('inactive');
    expect(counter.loads).toBe(2);

    await untilLive();
    const loadsWhenBack = counter.loads;
    expect(await status()).toBe('inactive');
    expect(await status()).toBe('inactive');
    expect(counter.loads).toBe(loadsWhenBack + 1);
  });

  it('serves an account that another process changed: through the API of this process', async () => {
    await untilLive();
    const services = createServices(test.db, { clock: systemClock, accessTokenTtlSeconds: 60 });
    expect((await services.referralSettings.get(tenant.accountId)).status).toBe('active');
    const change = nextChange();
    await elsewhere.referralSettings.set(tenant.accountId, inactive);
    await change;
    expect((await services.referralSettings.get(tenant.accountId)).status).toBe('inactive');
  });
});

describe.skipIf(testEngine !== 'sqlite')('AccountCache on SQLite (PRAGMA data_version)', () => {
  it('keeps a value while no other connection commits, and forgets it at the next read after one does', async () => {
    const test = await createTestDb();
    // Another process: its own connection to the same file.
    const other = openDb(test.url);
    try {
      const cache = new AccountCache<number>(test.db.changes, 'referral_settings', 60_000);
      let loads = 0;
      const load = async () => ++loads;
      expect(await cache.get(1, load)).toBe(1);
      expect(await cache.get(1, load)).toBe(1);
      // This connection's own writes do not move data_version (its services forget for themselves).
      await sql`create table mine (x integer)`.execute(test.db.kysely);
      expect(await cache.get(1, load)).toBe(1);
      await sql`create table theirs (x integer)`.execute(other.kysely);
      expect(await cache.get(1, load)).toBe(2);
      expect(await cache.get(1, load)).toBe(2);
    } finally {
      await other.close();
      await test.destroy();
    }
  });

  it('serves what another process changed at its next request: settings and rules', async () => {
    const test = await createTestDb();
    const other = openDb(test.url);
    try {
      const services = createServices(test.db, { clock: systemClock, accessTokenTtlSeconds: 60 });
      const elsewhere = createServices(other, { clock: systemClock, accessTokenTtlSeconds: 60 });
      const tenant = await createTenant(services);
      await services.referralSettings.set(tenant.accountId, referralSettingsFixture);
      expect((await services.referralSettings.get(tenant.accountId)).status).toBe('active');
      await elsewhere.referralSettings.set(tenant.accountId, inactive);
      expect((await services.referralSettings.get(tenant.accountId)).status).toBe('inactive');

      // Through the route's page cache, as a request reads it: kept while the rules version stands.
      const pages = new VersionedPages((accountId) => services.earningRules.version(accountId), 1 << 20);
      const page = () =>
        pages
          .get(tenant.accountId, '', async () => JSON.stringify(await services.earningRules.list(tenant.accountId, {})))
          .then(String);
      expect(JSON.parse(await page()).earning_rules).toHaveLength(0);
      await elsewhere.earningRules.create(tenant.accountId, earningRuleFixture('from elsewhere'));
      expect(JSON.parse(await page()).earning_rules).toHaveLength(1);
    } finally {
      await other.close();
      await test.destroy();
    }
  });
});
