import type { Kysely } from 'kysely';
import type { ActivityType } from '../activity-types/schemas.js';
import type { ActivityTypesService } from '../activity-types/service.js';
import type { Clock } from '../clock.js';
import { CustomerNotVisible, type CustomersService, type LockedCustomer } from '../customers/service.js';
import { type EarningRule, MAX_POINTS_PER_CREDIT } from '../earning-rules/schemas.js';
import type { EarningRulesService } from '../earning-rules/service.js';
import { DomainError, invalidParameter } from '../errors.js';
import type { EventsService } from '../events/service.js';
import type { PointsTransaction } from '../points-transactions/schemas.js';
import type { PointsTransactionsService } from '../points-transactions/service.js';
import { checkProperties } from '../properties.js';
import type { ReferralsService } from '../referrals/service.js';
import type { RewardFulfillmentsService } from '../reward-fulfillments/service.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { parseTime } from '../time.js';
import { type Decimal, decimalOfNumber, floorOf, floorProductQuotient, readAmount } from './decimal.js';
import {
  type ActivityRecord,
  findActivitiesPage,
  findActivityByDistinctId,
  insertActivityIfAbsent,
  type ListedActivity,
} from './repository.js';

export type { ListedActivity } from './repository.js';

import { type Activity, type ActivityInput, MAX_CLOCK_SKEW_MS } from './schemas.js';
import { reachOf, roomFor } from './window.js';

/** The outcome of recording an activity: it, and whether this request created it. */
export interface RecordedActivity {
  activity: Activity;
  created: boolean;
}

/** The filters of an export of activities (there is no list of them in the API): the ledger's two. */
export interface ActivitiesQuery {
  customer_id?: number;
  updated_at_min?: string;
}

/** Thrown inside the transaction when the activity's token and distinct_id are taken: roll back, answer the first. */
class Duplicate extends Error {}

/** Replays after losing a race for a new customer's email (see CustomerNotVisible). */
const MAX_ATTEMPTS = 3;

/**
 * A rolling limit of at most this many credits is checked from its credits' times alone, read in
 * one statement (at most 3 × max + 1 of them); a larger one counts them first, so that a
 * customer far below it is not sent thousands of times to learn they have room.
 */
const TIMES_ONLY_MAX = 100;

/**
 * Activities: what an app reports a customer did, evaluated against the account's earning rules
 * bound to its token, in the same transaction (docs/engine.md). Its events, in the order the
 * changes happen: `customer.created` for a new email (and its placement's tier change), then per
 * credit `points_transaction.created` (and `customer.vip_tier_changed` when it moved the customer),
 * then `activity.created` with its credits, then, when it completes a referral, `referral.completed`
 * with the sender's reward's events.
 */
export class ActivitiesService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly activityTypes: ActivityTypesService,
    private readonly earningRules: EarningRulesService,
    private readonly customers: CustomersService,
    private readonly ledger: PointsTransactionsService,
    private readonly events: EventsService,
    private readonly referrals: ReferralsService,
    private readonly rewardFulfillments: RewardFulfillmentsService,
  ) {}

  /**
   * Records the activity and credits what the rules give, all or nothing; `created: false` with
   * the earlier activity when its token and distinct_id were seen before (nothing credited).
   */
  async record(accountId: number, input: ActivityInput): Promise<RecordedActivity> {
    if ((input.customer_id === undefined) === (input.customer_email === undefined)) {
      const field = input.customer_id === undefined ? 'activity.customer_id' : 'activity.customer_email';
      throw invalidParameter(field, 'is required: send exactly one of customer_id and customer_email');
    }
    if (input.properties !== undefined) checkProperties(input.properties, 'activity.properties');
    const receivedAt = this.clock.now();
    const time = activityTime(input.created_on_origin_at, receivedAt);
    for (let attempt = 1; ; attempt++) {
      try {
        // Every attempt records the time the activity was received.
        return await this.uow.run((w) => this.recordIn(w, accountId, input, time), receivedAt);
      } catch (error) {
        if (error instanceof Duplicate) return { activity: await this.earlier(accountId, input), created: false };
        if (!(error instanceof CustomerNotVisible)) throw error;
        if (attempt >= MAX_ATTEMPTS) {
          throw new DomainError('unavailable', 'this customer is being created concurrently; retry shortly');
        }
      }
    }
  }

  /**
   * Activities for an export, read through `db` (a snapshot): up to `limit` of the account's
   * matching `query` with ids below `before` (null: from the newest), id descending, each with its
   * token but not its credits (the ledger's export has those); and the boundary of the next page
   * (undefined: none left).
   */
  async exportPage(
    db: Kysely<Database>,
    accountId: number,
    query: ActivitiesQuery,
    before: number | null,
    limit: number,
  ): Promise<{ rows: ListedActivity[]; next: number | undefined }> {
    const filters = {
      ...(query.customer_id === undefined ? {} : { customerId: query.customer_id }),
      ...(query.updated_at_min === undefined
        ? {}
        : { updatedAtMin: parseTime(query.updated_at_min, 'updated_at_min') }),
    };
    const rows = await findActivitiesPage(db, accountId, filters, 'next', before, limit);
    return { rows, next: rows.length === limit ? rows[rows.length - 1]!.id : undefined };
  }

  private async recordIn(w: Work, accountId: number, input: ActivityInput, time: number): Promise<RecordedActivity> {
    const type = await this.activityTypes.byToken(accountId, input.token, w);
    if (!type) throw invalidParameter('activity.token', 'names no activity type of this account');
    const rules = await this.earningRules.boundRules(w, accountId, type.id);
    const points = pointsByRule(rules, input.properties);

    // Customer first, then the activity: every transaction takes its locks in this order.
    let customer = await this.customerOf(w, accountId, input);
    const activity = await insertActivityIfAbsent(w.trx, {
      account_id: accountId,
      customer_id: customer.id,
      activity_type_id: type.id,
      distinct_id: input.distinct_id ?? null,
      properties: JSON.stringify(input.properties ?? {}),
      created_on_origin_at: input.created_on_origin_at === undefined ? null : time,
      occurred_at: time,
      created_at: w.now,
      updated_at: w.now,
    });
    if (!activity) throw new Duplicate();
    // The database's trigger marked the customer active at the activity's recording.
    customer = { ...customer, lastActiveAt: Math.max(customer.lastActiveAt ?? w.now, w.now) };

    const credits: PointsTransaction[] = [];
    // Only members earn; an activity of anyone else is recorded and credits nothing.
    if (customer.state === 'member') {
      const tierBefore = customer.vipTierId;
      for (const rule of rules) {
        const earned = points.get(rule.id) ?? 0;
        if (earned < 1 || !inTier(rule, tierBefore) || !(await this.withinLimit(w, rule, customer.id, time))) continue;
        const entry = {
          pointsChange: earned,
          description: rule.name,
          internalNote: null,
          activityId: activity.id,
          earningRuleId: rule.id,
          occurredAt: time,
        };
        // The next credit is posted against the balance this one left.
        const posted = await this.ledger.post(w, customer, entry);
        customer = posted.customer;
        credits.push(posted.transaction);
      }
    }
    // An order that applied the customer's reward codes uses them (the store's own codes are passed over).
    // At the order's time, never later than now (a store's clock may run ahead).
    const usedAt = Math.min(time, w.now);
    await this.rewardFulfillments.useOrderCodes(w, accountId, customer.id, input.properties?.discount_codes, usedAt);
    // Last of the work's events: the activity as answered holds every credit. A replay never
    // gets here (its work rolls back on Duplicate, or the idempotency layer does not run it).
    const recorded = toActivity(activity, type, credits);
    this.events.record(w, accountId, 'activity.created', { activity: recorded });
    // A referred friend's qualifying order completes their referral, in this transaction (the
    // referrals room owns the rules; the customer is locked, so one completion at a time).
    await this.referrals.completeFor(w, { accountId, customer, token: type.token, properties: input.properties, time });
    return { activity: recorded, created: true };
  }

  /** The customer the activity names, locked for this transaction; a new member for a new email. */
  private async customerOf(w: Work, accountId: number, input: ActivityInput): Promise<LockedCustomer> {
    const id = input.customer_id ?? (await this.customers.idForEmail(w, accountId, { email: input.customer_email! }));
    const customer = await this.customers.lock(w, accountId, id);
    if (!customer) throw invalidParameter('activity.customer_id', 'names no customer of this account');
    return customer;
  }

  /**
   * Step 2 of the contract: the rule's earning limit still allows a credit at `time`. A rolling
   * limit holds for every window, not only the one ending at `time`: a credit dated before others
   * (back-dated, or committed after them while waiting for the customer's lock) must fit in the
   * windows ending after it too. The customer is locked, so every credit committed so far is seen.
   */
  private async withinLimit(w: Work, rule: EarningRule, customerId: number, time: number) {
    const limit = rule.earning_limit;
    if (limit === null) return true;
    if (limit.type === 'lifetime') return (await this.ledger.countCredits(w, customerId, rule.id)) < limit.max;
    const { unit, unit_count: count } = limit.rolling;
    const { after, upTo } = reachOf(time, unit, count);
    const reach = { customerId, ruleId: rule.id, after, upTo };
    // Every window that holds `time` lies in the reach: with fewer than max credits there, each has
    // room. For a large max, one count tells the usual case apart, as cheap as the check of a
    // single window; for a small one, the times themselves cost no more, and spare the count's
    // round trip when the limit is reached (roomFor finds room in a reach with fewer than max).
    if (limit.max > TIMES_ONLY_MAX && (await this.ledger.countCreditsIn(w, reach)) < limit.max) return true;
    const credits = await this.ledger.creditTimesAround(w, { ...reach, time, each: limit.max });
    return roomFor(time, credits.earlier, credits.later, limit.max, unit, count);
  }

  /** The activity that holds the input's token and distinct_id, with what it credited. */
  private async earlier(accountId: number, input: ActivityInput): Promise<Activity> {
    const type = await this.activityTypes.byToken(accountId, input.token);
    const found = type && (await findActivityByDistinctId(this.db, accountId, type.id, input.distinct_id!));
    if (!type || !found)
      throw new DomainError('unavailable', 'this activity is being recorded concurrently; retry shortly');
    return toActivity(found, type, await this.ledger.ofActivity(found.id));
  }
}

/** The activity's time: created_on_origin_at (at most 5 minutes ahead), or when it was received. */
function activityTime(createdOnOriginAt: string | undefined, receivedAt: number): number {
  if (createdOnOriginAt === undefined) return receivedAt;
  const time = parseTime(createdOnOriginAt, 'activity.created_on_origin_at');
  if (time > receivedAt + MAX_CLOCK_SKEW_MS) {
    throw invalidParameter('activity.created_on_origin_at', 'must be at most 5 minutes in the future');
  }
  return time;
}

/** Step 1 of the contract: the rule applies to every tier, or to the customer's tier before the activity. */
function inTier(rule: EarningRule, tier: number | null): boolean {
  const tiers = rule.restricted_to_vip_tier_ids;
  return tiers.length === 0 || (tier !== null && tiers.includes(tier));
}

/**
 * Step 3 of the contract, for every rule before anything is written: the points each would
 * give. A variable rule needs `properties.amount`; a credit above 1,000,000,000 points is refused.
 */
export function pointsByRule(rules: readonly EarningRule[], properties: Record<string, unknown> | undefined) {
  const points = new Map<number, number>();
  let amount: Decimal | undefined;
  for (const rule of rules) {
    let earned: bigint;
    if (rule.reward_value.type === 'fixed') {
      earned = floorOf(decimalOfNumber(rule.reward_value.fixed.value));
    } else {
      amount ??= requireAmount(properties);
      const { value, per_amount } = rule.reward_value.variable;
      earned = floorProductQuotient(decimalOfNumber(value), amount, decimalOfNumber(per_amount));
    }
    if (earned > BigInt(MAX_POINTS_PER_CREDIT)) {
      throw invalidParameter(
        'activity.properties.amount',
        `would earn ${earned} points under earning rule ${rule.id}: one credit may give at most ${MAX_POINTS_PER_CREDIT}`,
      );
    }
    points.set(rule.id, Number(earned));
  }
  return points;
}

function requireAmount(properties: Record<string, unknown> | undefined): Decimal {
  const value = properties?.amount;
  if (value === undefined) {
    throw invalidParameter('activity.properties.amount', 'is required: a variable earning rule is bound to this token');
  }
  const amount = readAmount(value);
  if (typeof amount === 'string') throw invalidParameter('activity.properties.amount', amount);
  return amount;
}

/** The API's activity: what was stored, its token, and the credits it gave. */
function toActivity(record: ActivityRecord, type: ActivityType, credits: PointsTransaction[]): Activity {
  return {
    id: record.id,
    customer_id: record.customer_id,
    token: type.token,
    distinct_id: record.distinct_id,
    properties: record.properties,
    created_on_origin_at: record.created_on_origin_at,
    created_at: record.created_at,
    updated_at: record.updated_at,
    points_transactions: credits,
  };
}
