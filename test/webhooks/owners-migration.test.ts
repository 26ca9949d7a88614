import type { Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { createServices } from '../../src/services.js';
import type { Db } from '../../src/storage/db.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { WEBHOOK_DELIVERY_QUEUE } from '../../src/webhooks/service.js';
import type { TestDatabase } from '../helpers/database.js';
import { migratedBefore } from '../storage/migrating.js';

// The migration that records who made an endpoint (issue 49), on a database with endpoints made
// before it: a grant's take the grant's app and scopes (and stay narrowed by them), the others
// stay the merchant's, and both keep receiving what they did.

const OWNERS = '2026-11-28T0100-webhook-endpoint-owners';

describe(`migration ${OWNERS}`, () => {
  let database: TestDatabase;
  let db: Db;
  afterEach(async () => {
    await db?.close();
    await database?.drop();
  });

  it("gives a grant's endpoints the grant's app and scopes, keeps the others the merchant's, and both keep working", async () => {
    const migrated = await migratedBefore(OWNERS);
    ({ database, db } = migrated);
    const { kysely } = migrated;

    const now = Date.now();
    // Rows as they were before the migration (the endpoints without app_id and scopes).
    const insert = async (table: string, values: Record<string, unknown>) =>
      Number(
        (
          await (kysely as unknown as Kysely<any>)
            .insertInto(table)
            .values(values)
            .returning('id')
            .executeTakeFirstOrThrow()
        ).id,
      );
    const scopes = 'customer:read webhook_endpoint:write';
    const accountId = await insert('accounts', { name: 'Old shop', created_at: now });
    const appId = await insert('apps', {
      name: 'Reviews',
      client_id: 'app_old',
      client_secret_hash: null,
      scopes,
      redirect_uris: '[]',
      created_at: now,
    });
    const userId = await insert('users', {
      account_id: accountId,
      email: 'o@old.example',
      email_normalized: 'o@old.example',
      password_hash: 'x',
      created_at: now,
    });
    const grantId = await insert('oauth_grants', {
      account_id: accountId,
      app_id: appId,
      user_id: userId,
      scopes,
      created_at: now,
      revoked_at: null,
    });
    const endpoint = (grant: number | null, eventTypes: string) =>
      insert('webhook_endpoints', {
        account_id: accountId,
        grant_id: grant,
        url: 'https://old.example/hooks',
        enabled_events: '["*"]',
        event_types: eventTypes,
        status: 'enabled',
        secret: 'sealed',
        created_at: now,
        updated_at: now,
      });
    const apps = await endpoint(grantId, ' customer.created customer.updated ');
    const merchants = await endpoint(null, '*');

    await migrated.migrateRest();

    const rows = await kysely
      .selectFrom('webhook_endpoints')
      .select(['id', 'app_id', 'grant_id', 'scopes', 'event_types'])
      .orderBy('id')
      .execute();
    expect(rows.map((row) => ({ ...row, id: Number(row.id), app_id: row.app_id && Number(row.app_id) }))).toEqual([
      {
        id: apps,
        app_id: appId,
        grant_id: expect.anything(),
        scopes,
        event_types: ' customer.created customer.updated ',
      },
      { id: merchants, app_id: null, grant_id: null, scopes: null, event_types: '*' },
    ]);

    // Both keep receiving: a customer's event goes to both, a ledger entry to the merchant's only.
    const services = createServices(db, { clock: systemClock, accessTokenTtlSeconds: 3600 });
    await new UnitOfWork(db.kysely, systemClock).run(async (w) => {
      services.events.record(w, accountId, 'customer.created', {});
      services.events.record(w, accountId, 'points_transaction.created', {});
    });
    const jobs = await db.kysely
      .selectFrom('jobs')
      .innerJoin('events', 'events.id', 'jobs.subject_id')
      .select(['jobs.payload', 'events.type'])
      .where('jobs.queue', '=', WEBHOOK_DELIVERY_QUEUE)
      .orderBy('jobs.id')
      .execute();
    // One job per (event, endpoint), in no promised order among an event's endpoints.
    const sent = jobs.map((job) => [JSON.parse(job.payload).webhook_endpoint_id, job.type]);
    expect(sent.sort((x, y) => `${x[1]}${x[0]}`.localeCompare(`${y[1]}${y[0]}`))).toEqual([
      [apps, 'customer.created'],
      [merchants, 'customer.created'],
      [merchants, 'points_transaction.created'],
    ]);
    // The app's grant still sees its endpoint, and the merchant both.
    const app = { appId, grantId, scopes: null };
    expect((await services.webhooks.list(accountId, {}, app)).webhook_endpoints.map((e) => e.id)).toEqual([apps]);
    expect((await services.webhooks.list(accountId, {})).webhook_endpoints.map((e) => e.id)).toEqual([merchants, apps]);
  });
});
