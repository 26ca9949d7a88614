import { type RawBuilder, sql } from 'kysely';
import { systemClock } from '../../src/clock.js';
import { createServices, type Services } from '../../src/services.js';
import { openDb } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrator.js';
import { createTenant, type Tenant } from './app.js';

/**
 * Opens the database at `url` (migrating it), runs `seed` with the real services and closes it
 * again: how a test prepares data for server processes it starts on that database.
 */
export async function withServices<T>(url: string, seed: (services: Services) => Promise<T>): Promise<T> {
  const db = openDb(url, { sqliteSynchronous: 'NORMAL', poolMax: 2 });
  try {
    await migrateToLatest(db);
    return await seed(createServices(db, { clock: systemClock, accessTokenTtlSeconds: 3600 }));
  } finally {
    await db.close();
  }
}

/** A tenant in the database at `url`; `prepare` adds to it (settings, rules, …). */
export function seedTenant(
  url: string,
  name = 'Shop',
  prepare: (services: Services, tenant: Tenant) => Promise<unknown> = async () => {},
): Promise<Tenant> {
  return withServices(url, async (services) => {
    const tenant = await createTenant(services, name);
    await prepare(services, tenant);
    return tenant;
  });
}

/** A query of the integers 1 to `count` (column `i`) on `dialect`: the rows a bulk seed inserts from. */
export function integersUpTo(dialect: 'sqlite' | 'postgres', count: number): RawBuilder<{ i: number }> {
  return dialect === 'postgres'
    ? sql`select i from generate_series(1, ${sql.lit(count)}) as i`
    : sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${sql.lit(count)}) select i from n`;
}
