import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { createServices, type Services } from '../../src/services.js';
import type { SqliteChanges } from '../../src/storage/sqlite-changes.js';
import { createTenant, createTestDb, type Tenant, type TestDb, testEngine } from '../helpers/app.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';

// What another connection commits to the SQLite file is seen through `PRAGMA data_version`, read
// once per turn of the event loop for all the requests of that turn: never before the last of
// them has asked, so none is served from before a change committed ahead of it.

describe.skipIf(testEngine !== 'sqlite')('SqliteChanges', () => {
  let test: TestDb;
  let services: Services;
  let tenant: Tenant;
  let changes: SqliteChanges;
  // Another process's connection to the file: synchronous, so a commit can fall between two
  // requests of one turn.
  let other: Database.Database;

  beforeEach(async () => {
    test = await createTestDb();
    services = createServices(test.db, { clock: systemClock, accessTokenTtlSeconds: 60 });
    tenant = await createTenant(services);
    await services.referralSettings.set(tenant.accountId, referralSettingsFixture);
    changes = test.db.changes as SqliteChanges;
    other = new Database(test.url.slice('sqlite:'.length));
  });
  afterEach(async () => {
    other.close();
    await test.destroy();
  });

  const settings = () =>
    services.referralSettings.get(tenant.accountId).then(
      (found) => found.status,
      (error: { code?: string }) => error.code,
    );

  it('reads the number once for all the requests of a turn', async () => {
    expect(await settings()).toBe('active');
    const before = changes.readings;
    const statuses = await Promise.all(Array.from({ length: 20 }, settings));
    expect(statuses).toEqual(Array(20).fill('active'));
    expect(changes.readings - before).toBe(1);
    // The next turn reads it again.
    await settings();
    expect(changes.readings - before).toBe(2);
  });

  it('serves every request of a turn what was committed elsewhere before it asked', async () => {
    expect(await settings()).toBe('active');
    const asked = settings();
    other.prepare('delete from referral_settings where account_id = ?').run(tenant.accountId);
    const after = settings();
    // Both wait for one reading taken after the later one asked: the cached settings are gone.
    expect(await Promise.all([asked, after])).toEqual(['not_found', 'not_found']);
  });
});
