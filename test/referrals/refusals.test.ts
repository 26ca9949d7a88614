import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import type { RefusalReason } from '../../src/referrals/schemas.js';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import {
  DAY_MS,
  type Member,
  member,
  order,
  pointsReward,
  read,
  refer,
  referred,
  runningProgram,
  writtenState,
} from './program.js';

// Every refusal of POST /v1/referrals (../shared/referrals-contract.md), each writing nothing: no
// referral, customer, fulfillment, ledger entry, event, click or idempotency key, every balance as
// it was. The refusals come in the contract's order: program inactive, exactly one of code and
// sender id, unknown code or sender, sender not a member, then referral_not_allowed for
// self_referral, already_referred, existing_customer, sender_limit.

let t: TestApp;
let a: Tenant;
let token: string;
let jane: Member;

const FRIEND = 'friend@example.com';
/** The mailbox of issue 49, which collected the friend's reward once per spelling. */
const VICTIM = 'victim@gmail.com';
const EMAIL_FIELD = 'referral.receiver_customer_email';

// One app for the file (building one costs more than these tests); each test has an account of its own.
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());
beforeEach(async () => {
  a = await createTenant(t.services);
  token = await runningProgram(t, a.accountId);
  jane = await member(t, a.accountId, 'jane@example.com');
});

const byCode = (email: string, sender = jane) => ({ referral_code: sender.code, receiver_customer_email: email });
const byId = (email: string, sender = jane) => ({ sender_customer_id: sender.id, receiver_customer_email: email });
const bob = () => member(t, a.accountId, 'bob@example.com');

interface Refusal {
  name: string;
  /** Prepares the case (its writes are not counted): answers the body's `referral`. */
  setup: () => Promise<Record<string, unknown>>;
  code: ErrorCode;
  /** The field details[0] names (any of these). */
  field?: string | string[];
  reason?: RefusalReason;
}

const notAllowed = (name: string, reason: RefusalReason, setup: Refusal['setup']): Refusal => ({
  name,
  setup,
  code: 'referral_not_allowed',
  field: EMAIL_FIELD,
  reason,
});

const cases: Refusal[] = [
  // The program.
  {
    name: 'no program',
    setup: async () => {
      await t.services.referralSettings.delete(a.accountId);
      return byCode(FRIEND);
    },
    code: 'referral_program_inactive',
  },
  {
    name: 'an inactive program, configured',
    setup: async () => {
      await runningProgram(t, a.accountId, { status: 'inactive' });
      return byCode(FRIEND);
    },
    code: 'referral_program_inactive',
  },
  {
    name: "an active program in the spec's shape only (no qualifying activity type, no landing URL)",
    setup: async () => {
      await t.services.referralSettings.set(a.accountId, referralSettingsFixture);
      return byId(FRIEND);
    },
    code: 'referral_program_inactive',
  },
  {
    name: 'an inactive program, before a body naming both a code and a sender id',
    setup: async () => {
      await runningProgram(t, a.accountId, { status: 'inactive' });
      return { ...byCode(FRIEND), sender_customer_id: jane.id };
    },
    code: 'referral_program_inactive',
  },
  // Exactly one of referral_code and sender_customer_id.
  {
    name: 'both referral_code and sender_customer_id',
    setup: async () => ({ ...byCode(FRIEND), sender_customer_id: jane.id }),
    code: 'invalid_parameter',
    field: ['referral.referral_code', 'referral.sender_customer_id'],
  },
  {
    name: 'neither referral_code nor sender_customer_id',
    setup: async () => ({ receiver_customer_email: FRIEND }),
    code: 'invalid_parameter',
    field: ['referral.referral_code', 'referral.sender_customer_id'],
  },
  // Unknown code or sender in this account.
  {
    name: 'an unknown referral code',
    setup: async () => ({ referral_code: 'Zz9Zz9Zz9Zz9', receiver_customer_email: FRIEND }),
    code: 'invalid_parameter',
    field: 'referral.referral_code',
  },
  {
    name: 'a referral code of another account',
    setup: async () => {
      const b = await createTenant(t.services, 'Shop B');
      await runningProgram(t, b.accountId);
      return byCode(FRIEND, await member(t, b.accountId, 'bob@example.com'));
    },
    code: 'invalid_parameter',
    field: 'referral.referral_code',
  },
  {
    name: 'a referral code that is not one (too short, not base62)',
    setup: async () => ({ referral_code: 'ab-c', receiver_customer_email: FRIEND }),
    code: 'invalid_parameter',
    field: 'referral.referral_code',
  },
  {
    name: 'an unknown sender id',
    setup: async () => ({ sender_customer_id: 999_999, receiver_customer_email: FRIEND }),
    code: 'invalid_parameter',
    field: 'referral.sender_customer_id',
  },
  {
    name: 'a sender id of another account',
    setup: async () => {
      const b = await createTenant(t.services, 'Shop B');
      return byId(FRIEND, await member(t, b.accountId, 'bob@example.com'));
    },
    code: 'invalid_parameter',
    field: 'referral.sender_customer_id',
  },
  {
    name: 'a sender id that is not an id',
    setup: async () => ({ sender_customer_id: 'jane', receiver_customer_email: FRIEND }),
    code: 'invalid_parameter',
    field: 'referral.sender_customer_id',
  },
  {
    name: 'a receiver email that is not one',
    setup: async () => byCode('not-an-email'),
    code: 'invalid_parameter',
    field: EMAIL_FIELD,
  },
  {
    name: 'a first name over 255 characters',
    setup: async () => ({ ...byCode(FRIEND), receiver_first_name: 'f'.repeat(256) }),
    code: 'invalid_parameter',
    field: 'referral.receiver_first_name',
  },
  // The sender is not a member.
  ...(['candidate', 'disabled'] as const).flatMap((state): Refusal[] => [
    {
      name: `a ${state} sender, by code`,
      setup: async () => {
        await t.services.customers.setState(jane.id, state);
        return byCode(FRIEND);
      },
      code: 'customer_not_member',
    },
    {
      name: `a ${state} sender, by id`,
      setup: async () => {
        await t.services.customers.setState(jane.id, state);
        return byId(FRIEND);
      },
      code: 'customer_not_member',
    },
  ]),
  // The friend's customer exists but is not a member (no history): only members are referred.
  ...(['candidate', 'disabled'] as const).map(
    (state): Refusal => ({
      name: `a ${state} friend`,
      setup: async () => {
        const friend = await t.services.customers.create(a.accountId, { email: FRIEND });
        await t.services.customers.setState(friend.id, state);
        return byCode(FRIEND);
      },
      code: 'customer_not_member',
    }),
  ),
  {
    name: 'a disabled sender referring their own email: customer_not_member comes first',
    setup: async () => {
      await t.services.customers.setState(jane.id, 'disabled');
      return byCode('jane@example.com');
    },
    code: 'customer_not_member',
  },
  // self_referral: the sender's mailbox, however spelled.
  ...[
    'jane@example.com',
    'JANE@EXAMPLE.COM',
    '  Jane@Example.com  ',
    'jane+friends@example.com',
    'Jane+a+b@Example.Com',
  ].map((email) =>
    notAllowed(`self_referral: ${JSON.stringify(email)} for jane@example.com`, 'self_referral', async () =>
      byCode(email),
    ),
  ),
  notAllowed('self_referral by sender id', 'self_referral', async () => byId('JANE+x@example.com')),
  ...[
    ['jane.doe@gmail.com', 'janedoe@gmail.com'],
    ['jane.doe@gmail.com', 'J.A.N.E.D.O.E+shop@GMAIL.COM'],
    ['janedoe@gmail.com', 'jane.d.o.e@gmail.com'],
    ['john.smith@googlemail.com', 'johnsmith+ref@googlemail.com'],
    // gmail.com and googlemail.com are one domain (issue 49).
    ['john.smith.X@gmail.com', 'johnsmithX@googlemail.com'],
    ['jane.doe@googlemail.com', 'Jane.D.O.E+x@GMAIL.com'],
  ].map(([sender, email]) =>
    notAllowed(`self_referral: ${email} for ${sender} (gmail ignores dots)`, 'self_referral', async () =>
      byCode(email!, await member(t, a.accountId, sender!)),
    ),
  ),
  notAllowed('self_referral before already_referred (the sender was referred first)', 'self_referral', async () => {
    await referred(t, a, byCode('jane@example.com', await bob()));
    return byCode('JANE@example.com');
  }),
  // already_referred: the email has a referral in this account, whatever its status and sender.
  notAllowed('already_referred: a pending referral, spelled otherwise', 'already_referred', async () => {
    await referred(t, a, byCode(FRIEND, await bob()));
    return byCode('  FRIEND@Example.com ');
  }),
  notAllowed('already_referred: a pending referral by the same sender', 'already_referred', async () => {
    await referred(t, a, byId(FRIEND));
    return byCode(FRIEND);
  }),
  notAllowed('already_referred: a completed referral (before existing_customer)', 'already_referred', async () => {
    const made = await referred(t, a, byCode(FRIEND, await bob()));
    await order(t, a, token, FRIEND, { amount: 30 });
    expect((await read(t, a, `/v1/referrals/${made.id}`)).referral.status).toBe('completed');
    return byCode(FRIEND);
  }),
  notAllowed('already_referred: an expired referral', 'already_referred', async () => {
    const made = await referred(t, a, byCode(FRIEND, await bob()));
    t.clock.advance(31 * DAY_MS);
    expect((await read(t, a, `/v1/referrals/${made.id}`)).referral.status).toBe('expired');
    return byCode(FRIEND);
  }),
  // already_referred compares mailboxes as self_referral does (issue 49), whatever the status.
  notAllowed(
    'already_referred: a pending referral of another spelling, by another sender',
    'already_referred',
    async () => {
      await referred(t, a, byCode('V.ictim+promo@googlemail.com', await bob()));
      return byId('victim@gmail.com');
    },
  ),
  notAllowed('already_referred: a completed referral of another spelling', 'already_referred', async () => {
    const made = await referred(t, a, byCode(VICTIM, await bob()));
    await order(t, a, token, VICTIM, { amount: 30 });
    expect((await read(t, a, `/v1/referrals/${made.id}`)).referral.status).toBe('completed');
    return byCode('vic.tim+again@googlemail.com');
  }),
  notAllowed('already_referred: an expired referral of another spelling', 'already_referred', async () => {
    const made = await referred(t, a, byCode(VICTIM, await bob()));
    t.clock.advance(31 * DAY_MS);
    expect((await read(t, a, `/v1/referrals/${made.id}`)).referral.status).toBe('expired');
    return byCode('VICTIM+x@GMAIL.COM');
  }),
  // existing_customer: the email's customer recorded an activity or earned points.
  notAllowed('existing_customer: the receiver recorded an activity (no points)', 'existing_customer', async () => {
    const visit = (await t.services.activityTypes.create(a.accountId, { name: 'Visit' })).token;
    await order(t, a, visit, 'bob@example.com');
    expect((await read(t, a, '/v1/customers?state=member')).customers).toHaveLength(2);
    return byCode('Bob@Example.com');
  }),
  notAllowed('existing_customer: the receiver has points', 'existing_customer', async () => {
    const { id } = await bob();
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: id, points_change: 5 });
    return byId('bob@example.com');
  }),
  notAllowed('existing_customer: the receiver earned points and spent them all', 'existing_customer', async () => {
    const { id } = await bob();
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: id, points_change: 5 });
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: id, points_change: -5 });
    return byCode('bob@example.com');
  }),
  notAllowed('existing_customer: an activity before an order of the qualifying type', 'existing_customer', async () => {
    await order(t, a, token, 'bob@example.com', { amount: 1 });
    return byCode('bob@example.com');
  }),
  // sender_limit: the sender started sender_limit_per_30_days referrals in the last 30 days.
  notAllowed('sender_limit: at the limit, by code and by id together', 'sender_limit', async () => {
    await runningProgram(t, a.accountId, { sender_limit_per_30_days: 2 });
    await referred(t, a, byCode('f1@example.com'));
    await referred(t, a, byId('f2@example.com'));
    return byCode('f3@example.com');
  }),
  notAllowed('sender_limit: the oldest referral 1 ms short of 30 days old', 'sender_limit', async () => {
    await runningProgram(t, a.accountId, { sender_limit_per_30_days: 2 });
    await referred(t, a, byCode('f1@example.com'));
    t.clock.advance(20 * DAY_MS);
    await referred(t, a, byCode('f2@example.com'));
    t.clock.advance(10 * DAY_MS - 1);
    return byId('f3@example.com');
  }),
  notAllowed('existing_customer before sender_limit', 'existing_customer', async () => {
    await runningProgram(t, a.accountId, { sender_limit_per_30_days: 1 });
    await referred(t, a, byCode('f1@example.com'));
    const { id } = await bob();
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: id, points_change: 1 });
    return byCode('bob@example.com');
  }),
];

describe('POST /v1/referrals: every refusal writes nothing', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const body = await c.setup();
    const before = await writtenState(t);
    const error = expectError(await refer(t, a, body, { 'idempotency-key': 'refused-1' }), c.code);
    if (c.field !== undefined) {
      expect([c.field].flat()).toContain(error.details?.[0]?.field);
    }
    if (c.reason !== undefined) {
      expect(error.details).toEqual([{ field: EMAIL_FIELD, message: expect.any(String), reason: c.reason }]);
      expect(error.message).toMatch(new RegExp(`^${EMAIL_FIELD.replace('.', '\\.')} `));
    }
    expect(await writtenState(t)).toEqual(before);
  });
});

describe('POST /v1/referrals: what the refusals leave possible', () => {
  it('counts a sender’s referrals over the last 30 days only, and only theirs', async () => {
    await runningProgram(t, a.accountId, { sender_limit_per_30_days: 2 });
    const other = await bob();
    await referred(t, a, byCode('f1@example.com'));
    t.clock.advance(20 * DAY_MS);
    await referred(t, a, byCode('f2@example.com'));
    // Another sender's referrals are theirs.
    await referred(t, a, byCode('b1@example.com', other));
    await referred(t, a, byCode('b2@example.com', other));
    t.clock.advance(10 * DAY_MS - 1);
    expectError(await refer(t, a, byCode('f3@example.com')), 'referral_not_allowed');
    // Once the first referral is 30 days old, it no longer counts; the second still does.
    t.clock.advance(1);
    await referred(t, a, byCode('f3@example.com'));
    expect(expectError(await refer(t, a, byCode('f4@example.com')), 'referral_not_allowed').details[0].reason).toBe(
      'sender_limit',
    );
    // A raised limit applies at once.
    await runningProgram(t, a.accountId, { sender_limit_per_30_days: 3 });
    await referred(t, a, byId('f4@example.com'));
  });

  it('refers a customer who has neither activity nor points, and spellings of another mailbox', async () => {
    const existing = await bob();
    const made = await referred(t, a, byCode('BOB@example.com'));
    expect(made.receiver_customer?.id).toBe(existing.id);
    // Dots count outside gmail; another domain is another mailbox.
    await referred(t, a, byCode('j.ane@example.com'));
    await referred(t, a, byCode('jane@example.org'));
    const gmail = await member(t, a.accountId, 'jane.doe@gmail.com');
    await referred(t, a, byCode('jane.doe@example.com', gmail));
  });

  it('gives one mailbox the friend’s reward once, however spelled (issue 49)', async () => {
    await runningProgram(t, a.accountId, { receiver_reward: pointsReward('receiver_reward', 200) });
    const made = await referred(t, a, byCode(VICTIM));
    expect(made.receiver_points_transaction_id).toEqual(expect.any(Number));
    for (const email of ['victim+1@gmail.com', 'v.ictim@gmail.com', 'victim@googlemail.com', 'VICTIM+x@GMAIL.COM']) {
      const before = await writtenState(t);
      const error = expectError(await refer(t, a, byCode(email)), 'referral_not_allowed');
      expect(error.details[0].reason, email).toBe('already_referred');
      expect(await writtenState(t)).toEqual(before);
    }
    const { referrals } = await read(t, a, `/v1/referrals?sender_customer_id=${jane.id}`);
    expect(referrals.map((r: { id: number }) => r.id)).toEqual([made.id]);
    expect((await t.services.customers.get(a.accountId, made.receiver_customer!.id)).points_balance).toBe(200);
  });

  it('frees the Idempotency-Key of a refused request: the same key succeeds once the reason is gone', async () => {
    await runningProgram(t, a.accountId, { status: 'inactive' });
    const key = { 'idempotency-key': 'friend-1' };
    expectError(await refer(t, a, byCode(FRIEND), key), 'referral_program_inactive');
    await runningProgram(t, a.accountId);
    const first = await refer(t, a, byCode(FRIEND), key);
    expect(first.statusCode, first.body).toBe(201);
    const again = await refer(t, a, byCode(FRIEND), key);
    expect(again.body).toBe(first.body);
  });
});

describe('POST /v1/referrals: exactly one sender (issue 49)', () => {
  it('says a sender id sent with a code must not be sent, not that it "is required"; and a missing one is', async () => {
    const both = expectError(
      await refer(t, a, { ...byCode(FRIEND), sender_customer_id: jane.id }),
      'invalid_parameter',
    );
    expect(both.details).toEqual([
      {
        field: 'referral.sender_customer_id',
        message: 'must not be sent with referral_code: send exactly one of referral_code and sender_customer_id',
      },
    ]);
    const neither = expectError(await refer(t, a, { receiver_customer_email: FRIEND }), 'invalid_parameter');
    expect(neither.details).toEqual([
      {
        field: 'referral.referral_code',
        message: 'is required: send exactly one of referral_code and sender_customer_id',
      },
    ]);
  });
});
