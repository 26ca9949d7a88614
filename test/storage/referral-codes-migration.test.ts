import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { migrations } from '../../src/storage/migrations/index.js';
import type { TestDatabase } from '../helpers/database.js';
import { migratedUntil } from '../helpers/migrations.js';

// The referrals migration on a database that already has customers: every member gets a referral
// code (existing members too, in batches), nobody else does, and reward fulfillments may then be
// issued without a purchase (SQLite remakes the table for it, keeping its rows).

const REFERRALS = '2026-11-27T0100-referrals';

describe(`migration ${REFERRALS}`, () => {
  let database: TestDatabase;
  let db: Db;
  afterEach(async () => {
    await db?.close();
    await database?.drop();
  });

  it('gives every existing member a code of their own, and lets a fulfillment be issued without a purchase', async () => {
    const migrated = await migratedUntil(REFERRALS);
    ({ database, db } = migrated);
    const { kysely } = migrated;

    const now = Date.UTC(2026, 0, 1);
    const { id: accountId } = await kysely
      .insertInto('accounts')
      .values({ name: 'Old shop', created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    // More members than one batch of the backfill (500), and customers who are not members.
    const customers = Array.from({ length: 1203 }, (_, i) => ({
      account_id: accountId,
      email: `c${i}@example.com`,
      email_normalized: `c${i}@example.com`,
      first_name: null,
      last_name: null,
      created_at: now,
      updated_at: now,
    }));
    for (let i = 0; i < customers.length; i += 300) {
      await kysely
        .insertInto('customers')
        .values(customers.slice(i, i + 300))
        .execute();
    }
    await sql`update customers set state = 'candidate' where email like 'c1%'`.execute(kysely);
    await sql`update customers set state = 'disabled' where email like 'c2%'`.execute(kysely);

    await migrations[REFERRALS]!.up(kysely as never);

    const rows = await kysely.selectFrom('customers').select(['state', 'referral_code']).execute();
    const members = rows.filter((row) => row.state === 'member');
    const others = rows.filter((row) => row.state !== 'member');
    expect(members.length).toBeGreaterThan(500);
    expect(others.length).toBeGreaterThan(0);
    for (const member of members) expect(member.referral_code).toMatch(/^[0-9A-Za-z]{12}$/);
    expect(new Set(members.map((m) => m.referral_code)).size).toBe(members.length);
    expect(others.every((row) => row.referral_code === null)).toBe(true);

    const customer = await kysely.selectFrom('customers').select('id').executeTakeFirstOrThrow();
    await kysely
      .insertInto('reward_fulfillments')
      .values({
        account_id: accountId,
        customer_id: customer.id,
        points_purchase_id: null,
        name: 'A referral reward',
        code: 'K7MP2XQ9RT4WBN3H',
        image_url: '',
        fulfillment_status: 'issued',
        usage_status: 'unused',
        created_at: now,
        updated_at: now,
      })
      .execute();
    // The account's codes stay unique.
    await expect(
      kysely
        .insertInto('reward_fulfillments')
        .values({
          account_id: accountId,
          customer_id: customer.id,
          points_purchase_id: null,
          name: 'Another',
          code: 'K7MP2XQ9RT4WBN3H',
          image_url: '',
          fulfillment_status: 'issued',
          usage_status: 'unused',
          created_at: now,
          updated_at: now,
        })
        .execute(),
    ).rejects.toThrow();
  });
});
