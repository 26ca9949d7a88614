import type { Kysely } from 'kysely';
import { compare, readAmount } from '../activities/decimal.js';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import type { Customer } from '../customers/schemas.js';
import { CustomerNotVisible, type CustomersService, type LockedCustomer } from '../customers/service.js';
import { normalizeEmail } from '../email.js';
import { DomainError, invalidParameter, notFound } from '../errors.js';
import type { EventsService } from '../events/service.js';
import { Cursors, keysetPage } from '../pagination/keyset.js';
import { DEFAULT_LIMIT } from '../pagination/schemas.js';
import type { PointsTransactionsService } from '../points-transactions/service.js';
import type { ProgramReward, ReferralProgram } from '../referral-settings/schemas.js';
import type { ReferralSettingsService } from '../referral-settings/service.js';
import type { RewardFulfillmentsService } from '../reward-fulfillments/service.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { DAY_MS, parseTime } from '../time.js';
import { mailboxKey } from './email.js';
import {
  completeIfPending,
  countClick,
  countStartedSince,
  findPendingForReceiver,
  findReferral,
  findReferralsPage,
  hasActivity,
  hasReferralFor,
  insertReferralIfAbsent,
  programFigures,
  type ReferralFilters,
  type ReferralRow,
  setReceiverReward,
  setSenderReward,
} from './repository.js';
import type {
  Referral,
  ReferralCustomer,
  ReferralInput,
  ReferralStatus,
  ReferralsPage,
  ReferralsQuery,
  RefusalReason,
} from './schemas.js';

/** The sender limit counts the referrals started in any 30 days. */
const SENDER_LIMIT_WINDOW_MS = 30 * DAY_MS;
const REFERRALS_CURSOR = { resource: 'referrals', filtered: true };

/** What a referral URL leads to: the landing URL with `ref`, or nothing (unknown code, program not active). */
export type ReferralLanding = { location: string } | null;

/** The program's figures over the last 30 days, for the console's overview. */
export interface ReferralFigures {
  clicks: number;
  referrals: number;
  completed: number;
  /** Completed referrals per referral made, 0 to 1 (0 when none was made). */
  conversion: number;
  rewards: number;
}

/** What an activity's transaction tells the referral program (see completeFor). */
export interface QualifyingActivity {
  accountId: number;
  /** The activity's customer, locked by the activity's transaction. */
  customer: LockedCustomer;
  token: string;
  properties: Record<string, unknown> | undefined;
  /** The activity's time. */
  time: number;
}

/**
 * The referral program that runs (docs/referrals.md): referrals made with a member's code, each
 * rewarding the friend at once and the sender when the friend completes a qualifying order. Every
 * rule lives here; the activities room only tells it of each activity, in the activity's
 * transaction.
 */
export class ReferralsService {
  private readonly cursors: Cursors;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly settings: ReferralSettingsService,
    private readonly customers: CustomersService,
    private readonly ledger: PointsTransactionsService,
    private readonly fulfillments: RewardFulfillmentsService,
    private readonly events: EventsService,
  ) {
    this.cursors = new Cursors(db, clock);
  }

  /**
   * Makes a referral in `w` (`POST /v1/referrals`): the friend's customer found or made, the
   * referral pending until `window_days` from now, the friend's reward issued, with their events.
   * Every refusal of the contract is thrown before anything is written, or rolls the work back.
   */
  async create(w: Work, accountId: number, input: ReferralInput): Promise<Referral> {
    const program = await this.settings.programIn(w, accountId);
    if (!program || !isRunning(program)) throw inactive(program);
    const choice = 'send exactly one of referral_code and sender_customer_id';
    if (input.referral_code === undefined && input.sender_customer_id === undefined) {
      throw invalidParameter('referral.referral_code', `is required: ${choice}`);
    }
    if (input.referral_code !== undefined && input.sender_customer_id !== undefined) {
      // As an activity's customer_id and customer_email: the second one sent is the one refused.
      throw invalidParameter('referral.sender_customer_id', `must not be sent with referral_code: ${choice}`);
    }
    const senderId = await this.senderOf(w, accountId, input);
    // The sender stays locked to the end: their referrals are counted against the limit one at a time.
    const sender = await this.customers.lock(w, accountId, senderId);
    if (!sender) throw invalidParameter('referral.sender_customer_id', 'names no customer of this account');
    if (sender.state !== 'member') {
      throw new DomainError(
        'customer_not_member',
        `customer ${sender.id} is ${sender.state}: only members refer friends`,
      );
    }
    const email = input.receiver_customer_email;
    // One rule for both checks: a mailbox is one sender and one friend however it is spelled.
    const mailbox = mailboxKey(email);
    if (mailbox === mailboxKey(sender.email)) {
      throw notAllowed('self_referral', 'is the email of the customer who refers');
    }
    // The friend's customer is read before their referrals: a customer another request made (and
    // rewarded) for this email is then never seen without the referral it committed with.
    const existing = await this.customers.findByEmail(w, accountId, email);
    if (await hasReferralFor(w.trx, accountId, mailbox)) {
      throw notAllowed('already_referred', 'was already referred to this program');
    }
    if (existing && (existing.pointsEarned > 0 || (await hasActivity(w.trx, existing.id)))) {
      throw notAllowed('existing_customer', 'belongs to a customer who already earned points or recorded activities');
    }
    const started = await countStartedSince(w.trx, sender.id, w.now - SENDER_LIMIT_WINDOW_MS);
    if (started >= program.sender_limit_per_30_days) {
      throw notAllowed(
        'sender_limit',
        `cannot be referred by customer ${sender.id}, who started ${started} referrals in the last 30 days (the limit)`,
      );
    }

    const receiverId = await this.receiverId(w, accountId, input);
    const referral = await insertReferralIfAbsent(w.trx, {
      account_id: accountId,
      sender_customer_id: sender.id,
      receiver_customer_id: receiverId,
      receiver_email: email,
      receiver_email_normalized: normalizeEmail(email),
      receiver_mailbox: mailbox,
      referral_code: input.referral_code ?? null,
      expires_at: w.now + program.window_days * DAY_MS,
      created_at: w.now,
      updated_at: w.now,
    });
    // Another request referred this mailbox (in any spelling) after our check, and committed first.
    if (!referral) throw notAllowed('already_referred', 'was already referred to this program');
    const receiver = (await this.customers.lock(w, accountId, receiverId))!;
    // Only members earn: a friend whose customer is a candidate or disabled is not referred.
    if (receiver.state !== 'member') {
      throw new DomainError(
        'customer_not_member',
        `customer ${receiver.id}, whose email this is, is ${receiver.state}: only members are referred and rewarded`,
      );
    }
    const reward = await this.reward(w, receiver, program.receiver_reward);
    const written = await setReceiverReward(w.trx, referral.id, reward);
    const shown = await this.showIn(w, written);
    this.events.record(w, accountId, 'referral.created', { referral: shown });
    return shown;
  }

  /**
   * In an activity's transaction: completes the pending referral of the activity's customer when
   * the activity qualifies (the program's token, an amount at least its minimum, dated from the
   * referral's creation until it expires), and rewards the sender if they are still a member.
   * Exactly once: a racing completion finds the referral completed and gives nothing.
   */
  async completeFor(w: Work, activity: QualifyingActivity): Promise<void> {
    const program = await this.settings.programIn(w, activity.accountId);
    if (!program || !isRunning(program) || activity.token !== program.qualifying_activity_token) return;
    if (!meetsMinimum(activity.properties, program.minimum_amount)) return;
    const pending = await findPendingForReceiver(w.trx, activity.accountId, activity.customer.id);
    if (!pending || !inWindow(pending, activity.time, w.now)) return;
    const completed = await completeIfPending(w.trx, pending.id, w.now, w.now);
    if (!completed) return;
    const sender = await this.customers.lock(w, activity.accountId, completed.sender_customer_id);
    const rewarded =
      sender?.state === 'member'
        ? { ...(await this.reward(w, sender, program.sender_reward)), skipped: null }
        : { fulfillmentId: null, pointsTransactionId: null, skipped: 'sender_not_member' };
    const written = await setSenderReward(w.trx, completed.id, rewarded);
    this.events.record(w, activity.accountId, 'referral.completed', { referral: await this.showIn(w, written) });
  }

  /** The account's referral; `404 not_found` for an id the account does not have. */
  async get(accountId: number, id: number): Promise<Referral> {
    const row = await findReferral(this.db, accountId, id);
    if (!row) throw notFound(`referral ${id} does not exist`);
    const [shown] = await this.show(accountId, [row], this.clock.now());
    return shown!;
  }

  /** Why a completed referral gave its sender nothing (for the console), or null. */
  async skippedReason(accountId: number, id: number): Promise<string | null> {
    return (await findReferral(this.db, accountId, id))?.sender_reward_skipped ?? null;
  }

  /** One page of the account's referrals matching the query's filters, id descending. */
  async page(accountId: number, query: ReferralsQuery): Promise<ReferralsPage> {
    const filters: ReferralFilters = {
      ...(query.sender_customer_id === undefined ? {} : { senderCustomerId: query.sender_customer_id }),
      ...(query.receiver_customer_email === undefined
        ? {}
        : { receiverEmailNormalized: normalizeEmail(query.receiver_customer_email) }),
      ...(query.status === undefined ? {} : { status: query.status }),
      ...(query.updated_at_min === undefined
        ? {}
        : { updatedAtMin: parseTime(query.updated_at_min, 'updated_at_min') }),
    };
    const now = this.clock.now();
    const page = await keysetPage({
      codec: await this.cursors.codec(REFERRALS_CURSOR),
      accountId,
      limit: query.limit ?? DEFAULT_LIMIT,
      cursor: query.cursor,
      filters,
      fetch: (direction, boundary, rows) =>
        findReferralsPage(this.db, accountId, filters, now, direction, boundary, rows),
    });
    return { referrals: await this.show(accountId, page.items, now), metadata: page.metadata };
  }

  /**
   * Where the referral URL of `code` leads: the program's landing URL with `ref=<code>`, counting
   * the click; null for an unknown code or a program that is not active.
   */
  async land(code: string): Promise<ReferralLanding> {
    const sender = await this.customers.byReferralCode(code);
    if (!sender) return null;
    const program = await this.settings.program(sender.accountId);
    if (!program || !isRunning(program) || program.landing_url === null) return null;
    await this.uow.run((w) => countClick(w.trx, { accountId: sender.accountId, customerId: sender.id, now: w.now }));
    const location = new URL(program.landing_url);
    location.searchParams.set('ref', code);
    return { location: location.href };
  }

  /** The program's figures over the last 30 days (clicks, referrals, completed, conversion, rewards). */
  async figures(accountId: number): Promise<ReferralFigures> {
    const found = await programFigures(this.db, accountId, this.clock.now() - 30 * DAY_MS);
    return { ...found, conversion: found.referrals === 0 ? 0 : found.completed / found.referrals };
  }

  /** The sender a referral names: by code (a customer of this account) or by id. */
  private async senderOf(w: Work, accountId: number, input: ReferralInput): Promise<number> {
    if (input.sender_customer_id !== undefined) return input.sender_customer_id;
    const owner = await this.customers.byReferralCode(input.referral_code!, w);
    if (!owner || owner.accountId !== accountId) {
      throw invalidParameter('referral.referral_code', 'names no customer of this account');
    }
    return owner.id;
  }

  /** The friend's customer: the one with their email, or a new member with their names. */
  private async receiverId(w: Work, accountId: number, input: ReferralInput): Promise<number> {
    try {
      return await this.customers.idForEmail(w, accountId, {
        email: input.receiver_customer_email,
        first_name: input.receiver_first_name ?? null,
        last_name: input.receiver_last_name ?? null,
      });
    } catch (error) {
      if (error instanceof CustomerNotVisible) {
        throw new DomainError('unavailable', 'this customer is being created concurrently; retry shortly');
      }
      throw error;
    }
  }

  /** Issues `reward` to the customer (locked in `w`): a fulfillment with a code, or points. */
  private async reward(
    w: Work,
    customer: LockedCustomer,
    reward: ProgramReward,
  ): Promise<{ fulfillmentId: number | null; pointsTransactionId: number | null }> {
    if (reward.fulfillment === 'points') {
      const entry = { pointsChange: reward.points!, description: reward.name, internalNote: null };
      const posted = await this.ledger.post(w, customer, entry);
      return { fulfillmentId: null, pointsTransactionId: posted.transaction.id };
    }
    const fulfillment = await this.fulfillments.issue(w, {
      accountId: customer.accountId,
      customerId: customer.id,
      pointsPurchaseId: null,
      reward: { name: reward.name, imageUrl: reward.image.url },
    });
    return { fulfillmentId: fulfillment.id, pointsTransactionId: null };
  }

  /** The referral as the work's transaction sees it (every read on its connection, none from the pool). */
  private async showIn(w: Work, row: ReferralRow): Promise<Referral> {
    const [shown] = await this.show(row.account_id, [row], w.now, w);
    return shown!;
  }

  /**
   * The referrals as the API shows them, with their customers and fulfillments: read in `w` when
   * given (a transaction must not wait for a second connection of the pool), else from the pool.
   */
  private async show(accountId: number, rows: readonly ReferralRow[], now: number, w?: Work): Promise<Referral[]> {
    const customerIds = rows.flatMap((row) => [row.sender_customer_id, row.receiver_customer_id]);
    const fulfillmentIds = rows.flatMap((row) =>
      [row.receiver_reward_fulfillment_id, row.sender_reward_fulfillment_id].filter((id): id is number => id !== null),
    );
    const customers = await this.customers.shownByIds(accountId, customerIds, w);
    const fulfillments = await this.fulfillments.byIds(w?.trx ?? this.db, accountId, fulfillmentIds);
    const fulfillment = (id: number | null) => (id === null ? null : (fulfillments.get(id) ?? null));
    return rows.map((row) => ({
      id: row.id,
      status: statusOf(row, now),
      referral_code: row.referral_code,
      receiver_customer: nested(customers.get(row.receiver_customer_id)),
      receiver_customer_email: row.receiver_email,
      receiver_reward_fulfillment: fulfillment(row.receiver_reward_fulfillment_id),
      receiver_points_transaction_id: row.receiver_points_transaction_id,
      sender_customer: nested(customers.get(row.sender_customer_id))!,
      sender_reward_fulfillment: fulfillment(row.sender_reward_fulfillment_id),
      sender_points_transaction_id: row.sender_points_transaction_id,
      expires_at: isoTime(row.expires_at),
      completed_at: row.completed_at === null ? null : isoTime(row.completed_at),
      created_at: isoTime(row.created_at),
      updated_at: isoTime(row.updated_at),
    }));
  }
}

/** Whether the program takes referrals: active, with a qualifying activity type and a landing URL. */
export function isRunning(program: ReferralProgram): boolean {
  return program.status === 'active' && program.qualifying_activity_token !== null && program.landing_url !== null;
}

/** A pending referral past its window shows `expired` (never stored: nothing has to run at the instant). */
function statusOf(row: ReferralRow, now: number): ReferralStatus {
  if (row.status === 'pending' && row.expires_at <= now) return 'expired';
  return row.status;
}

/**
 * Whether an activity at `time`, recorded at `now`, falls in the referral's window: from its
 * creation (an order dated, by created_on_origin_at, before the friend was referred is not one the
 * referral led to; issue 49) to expires_at. Past expires_at the referral is expired and never
 * completes: not even by an order dated inside the window but reported after it.
 */
function inWindow(referral: ReferralRow, time: number, now: number): boolean {
  return time >= referral.created_at && time < referral.expires_at && now < referral.expires_at;
}

/** Whether the activity's `properties.amount` (0 when absent) is at least the program's minimum. */
function meetsMinimum(properties: Record<string, unknown> | undefined, minimum: string): boolean {
  const amount = readAmount(properties?.amount ?? 0);
  const least = readAmount(minimum);
  return typeof amount !== 'string' && typeof least !== 'string' && compare(amount, least) >= 0;
}

/** A customer as a referral nests them (the reference's shape). */
function nested(customer: Customer | undefined): ReferralCustomer | null {
  if (!customer) return null;
  const { vip_status: _status, points_expire_at: _expiry, ...fields } = customer;
  return fields;
}

function inactive(program: ReferralProgram | undefined): DomainError {
  const why =
    program === undefined
      ? 'this account has no referral program'
      : program.status !== 'active'
        ? 'the referral program of this account is not active'
        : 'the referral program of this account is not set up to run: it needs qualifying_activity_token and landing_url (loyalty referral-settings set, or the console)';
  return new DomainError('referral_program_inactive', why);
}

/** `422 referral_not_allowed` about the receiver's email, with the rule's reason. */
function notAllowed(reason: RefusalReason, message: string): DomainError {
  const field = 'referral.receiver_customer_email';
  return new DomainError('referral_not_allowed', `${field} ${message}`, [{ field, message, reason }]);
}
