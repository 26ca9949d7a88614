import { afterEach, describe, expect, it } from 'vitest';
import { migrations } from '../../src/storage/migrations/index.js';
import { type MigratingDatabase, migratedBefore } from './migrating.js';

// The referral mailboxes migration (issue 49) on a database that already has referrals: each gets
// its receiver's mailbox (src/referrals/email.ts), in batches; where an account already holds
// several referrals of one mailbox, the first keeps the key and the later ones none, so the
// migration never fails on them; from then on the index refuses a second referral of a mailbox in
// an account, and only there.

const MAILBOXES = '2026-11-29T0100-referral-mailboxes';
/** Referrals of the second account: more than two batches of the backfill (500). */
const FILLERS = 1100;

describe(`migration ${MAILBOXES}`, () => {
  let migrating: MigratingDatabase | undefined;
  afterEach(async () => {
    await migrating?.db.close();
    await migrating?.database.drop();
  });

  it('keys every referral by its mailbox, keeps the first of duplicates, and then refuses new ones', async () => {
    migrating = await migratedBefore(MAILBOXES);
    const { kysely } = migrating;
    const now = Date.UTC(2026, 0, 1);
    const account = async (name: string) => {
      const { id } = await kysely
        .insertInto('accounts')
        .values({ name, created_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
      const { id: customer } = await kysely
        .insertInto('customers')
        .values({
          account_id: id,
          email: `member@${id}.example`,
          email_normalized: `member@${id}.example`,
          first_name: null,
          last_name: null,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return { id, customer };
    };
    const a = await account('Shop A');
    const b = await account('Shop B');
    // The rows need customers; one per account serves as sender and receiver alike.
    const referral = (shop: { id: number; customer: number }, email: string, status: 'pending' | 'completed') => ({
      account_id: shop.id,
      sender_customer_id: shop.customer,
      receiver_customer_id: shop.customer,
      receiver_email: email,
      receiver_email_normalized: email.toLowerCase(),
      referral_code: null,
      status,
      expires_at: now + 1,
      completed_at: status === 'completed' ? now : null,
      created_at: now,
      updated_at: now,
    });
    // Spellings of one mailbox, in every status, as issue 49 made them; two mailboxes beside.
    const shopA: Array<[string, 'pending' | 'completed', string | null]> = [
      ['victim@gmail.com', 'completed', 'victim@gmail.com'],
      ['V.ictim@gmail.com', 'pending', null],
      ['victim@googlemail.com', 'pending', null],
      ['VICTIM+x@GMAIL.COM', 'completed', null],
      ['jane.doe@example.com', 'pending', 'jane.doe@example.com'],
      ['janedoe@example.com', 'pending', 'janedoe@example.com'],
      ['Jane.Doe+promo@example.com', 'pending', null],
    ];
    // Another account's referral of the mailbox keeps its key; fillers, with one duplicate a batch later.
    const shopB: Array<[string, 'pending' | 'completed', string | null]> = [
      ['victim+b@googlemail.com', 'pending', 'victim@gmail.com'],
      ...Array.from({ length: FILLERS }, (_, i): [string, 'pending', string] => [
        `f.${i}@gmail.com`,
        'pending',
        `f${i}@gmail.com`,
      ]),
      ['F1+late@googlemail.com', 'pending', null],
    ];
    const rows = [
      ...shopA.map(([email, status]) => referral(a, email, status)),
      ...shopB.map(([email, status]) => referral(b, email, status)),
    ];
    for (let i = 0; i < rows.length; i += 300) {
      await kysely
        .insertInto('referrals')
        .values(rows.slice(i, i + 300))
        .execute();
    }
    const expected = [...shopA, ...shopB].map(([email, , key]) => [email, key]);

    const migration = migrations[MAILBOXES]!;
    await migration.up(kysely as never);
    const keys = async () =>
      (await kysely.selectFrom('referrals').select(['receiver_email', 'receiver_mailbox']).orderBy('id').execute()).map(
        (row) => [row.receiver_email, row.receiver_mailbox],
      );
    expect(await keys()).toEqual(expected);

    // One referral per mailbox and account from now on; none of the earlier ones was lost.
    const next = (shop: typeof a, email: string, mailbox: string) =>
      kysely
        .insertInto('referrals')
        .values({ ...referral(shop, email, 'pending'), receiver_mailbox: mailbox })
        .execute();
    await expect(next(a, 'vic.tim@gmail.com', 'victim@gmail.com')).rejects.toThrow();
    await expect(next(b, 'f.7+x@gmail.com', 'f7@gmail.com')).rejects.toThrow();
    await next(b, 'jane.doe@example.com', 'jane.doe@example.com');
    await next(a, 'new@example.com', 'new@example.com');

    // Down and up again: the same keys, the rows made since included.
    const migrated = await keys();
    await migration.down!(kysely as never);
    await migration.up(kysely as never);
    expect(await keys()).toEqual(migrated);
  });
});
