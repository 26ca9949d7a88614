import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { rowCount, unbalancedCustomers } from '../helpers/engine.js';
import { member, pointsReward, refer, runningProgram } from './program.js';

// already_referred under concurrency (issue 49): parallel referrals of spellings of one mailbox,
// each by a sender of its own (one sender's referrals wait for each other on the sender's lock),
// yield one referral and one receiver reward. Parallel requests into one app: on PostgreSQL each
// runs in a transaction of its own on the pool, and only the database's unique index on the
// mailbox can tell the second from the first. The same race against real server processes is in
// test/reliability/referral-races.test.ts.

const ROUNDS = 6;
/** Spellings of one gmail mailbox, as a store could send them. */
const spellings = (name: string) => [
  `${name}@gmail.com`,
  `${name}+1@gmail.com`,
  `${name.slice(0, 1)}.${name.slice(1)}@gmail.com`,
  `${name}@googlemail.com`,
  `${name.toUpperCase()}+x@GMAIL.COM`,
];

let t: TestApp;
let a: Tenant;

beforeAll(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  await runningProgram(t, a.accountId, { receiver_reward: pointsReward('receiver_reward', 200) });
});
afterAll(async () => t.close());

describe('POST /v1/referrals: spellings of one mailbox at once', () => {
  it('makes one referral and gives one reward per mailbox, refusing the others already_referred', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const emails = spellings(`victim${round}`);
      const senders = await Promise.all(
        emails.map((_, i) => member(t, a.accountId, `sender-${round}-${i}@shop.example`)),
      );
      const referralsBefore = await rowCount(t.db.kysely, 'referrals');
      const replies = await Promise.all(
        emails.map((email, i) => refer(t, a, { referral_code: senders[i]!.code, receiver_customer_email: email })),
      );
      const outcomes = replies.map((r) =>
        r.statusCode === 201 ? '201' : `${r.statusCode} ${r.json().error?.details?.[0]?.reason ?? r.body}`,
      );
      expect(outcomes.sort()).toEqual(['201', ...emails.slice(1).map(() => '422 already_referred')]);
      expect(await rowCount(t.db.kysely, 'referrals')).toBe(referralsBefore + 1);
      // Only the winner's spelling has a customer, with the one reward; the others rolled back theirs.
      const customers = await t.db.kysely
        .selectFrom('customers')
        .select(['email', 'points_balance'])
        .where('account_id', '=', a.accountId)
        .where(
          'email_normalized',
          'in',
          emails.map((email) => email.toLowerCase()),
        )
        .execute();
      const winner = replies.find((r) => r.statusCode === 201)!.json().referral;
      expect(customers).toEqual([{ email: winner.receiver_customer_email, points_balance: 200 }]);
    }
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  });
});
