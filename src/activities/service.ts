import type { Kysely } from 'kysely';
import { findActivityTypeByToken } from '../activity-types/repository.js';
import type { ActivityType } from '../activity-types/schemas.js';
import type { Clock } from '../clock.js';
import { isoTime } from '../common-schemas.js';
import { lockCustomer } from '../customers/repository.js';
import { CustomerNotVisible, type CustomersService, parseTime } from '../customers/service.js';
import { findBoundRules } from '../earning-rules/repository.js';
import { type EarningRule, MAX_POINTS_PER_CREDIT } from '../earning-rules/schemas.js';
import { DomainError, invalidParameter } from '../errors.js';
import {
  countCredits,
  countCreditsIn,
  findActivityTransactions,
  findCreditTimesAround,
} from '../points-transactions/repository.js';
import type { PointsTransaction } from '../points-transactions/schemas.js';
import type { PointsTransactionsService } from '../points-transactions/service.js';
import { checkProperties } from '../properties.js';
import type { ActivityRow, CustomerRow, Database } from '../storage/schema.js';
import { type Decimal, decimalOfNumber, floorOf, floorProductQuotient, readAmount } from './decimal.js';
import { findActivityByDistinctId, insertActivityIfAbsent } from './repository.js';
import { type Activity, type ActivityInput, MAX_CLOCK_SKEW_MS } from './schemas.js';
import { reachOf, roomFor } from './window.js';

/** The outcome of recording an activity: it, and whether this request created it. */
export interface RecordedActivity {
  activity: Activity;
  created: boolean;
}

/** Thrown inside the transaction when the activity's token and distinct_id are taken: roll back, answer the first. */
class Duplicate extends Error {}

/** Replays after losing a race for a new customer's email (see CustomerNotVisible). */
const MAX_ATTEMPTS = 3;

/**
 * Activities: what an app reports a customer did, evaluated against the account's earning rules
 * bound to its token, in the same transaction (docs/engine.md).
 */
export class ActivitiesService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly customers: CustomersService,
    private readonly ledger: PointsTransactionsService,
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
        return await this.db.transaction().execute((trx) => this.recordIn(trx, accountId, input, time, receivedAt));
      } catch (error) {
        if (error instanceof Duplicate) return { activity: await this.earlier(accountId, input), created: false };
        if (!(error instanceof CustomerNotVisible)) throw error;
        if (attempt >= MAX_ATTEMPTS) {
          throw new DomainError('unavailable', 'this customer is being created concurrently; retry shortly');
        }
      }
    }
  }

  private async recordIn(
    trx: Kysely<Database>,
    accountId: number,
    input: ActivityInput,
    time: number,
    now: number,
  ): Promise<RecordedActivity> {
    const type = await findActivityTypeByToken(trx, accountId, input.token);
    if (!type) throw invalidParameter('activity.token', 'names no activity type of this account');
    const rules = await findBoundRules(trx, accountId, type.id);
    const points = pointsByRule(rules, input.properties);

    // Customer first, then the activity: every transaction takes its locks in this order.
    const customer = await this.customerOf(trx, accountId, input, now);
    const activity = await insertActivityIfAbsent(trx, {
      account_id: accountId,
      customer_id: customer.id,
      activity_type_id: type.id,
      distinct_id: input.distinct_id ?? null,
      properties: JSON.stringify(input.properties ?? {}),
      created_on_origin_at: input.created_on_origin_at === undefined ? null : time,
      occurred_at: time,
      created_at: now,
      updated_at: now,
    });
    if (!activity) throw new Duplicate();

    const credits: PointsTransaction[] = [];
    // Only members earn; an activity of anyone else is recorded and credits nothing.
    if (customer.state === 'member') {
      const tierBefore = customer.vip_tier_id;
      for (const rule of rules) {
        const earned = points.get(rule.id) ?? 0;
        if (earned < 1 || !inTier(rule, tierBefore) || !(await this.withinLimit(trx, rule, customer.id, time)))
          continue;
        const entry = {
          pointsChange: earned,
          description: rule.name,
          internalNote: null,
          activityId: activity.id,
          earningRuleId: rule.id,
          occurredAt: time,
        };
        credits.push(await this.ledger.post(trx, customer, entry, now));
      }
    }
    return { activity: toActivity(activity, type, credits), created: true };
  }

  /** The customer the activity names, locked for this transaction; a new member for a new email. */
  private async customerOf(
    trx: Kysely<Database>,
    accountId: number,
    input: ActivityInput,
    now: number,
  ): Promise<CustomerRow> {
    const id =
      input.customer_id ?? (await this.customers.idForEmail(trx, accountId, { email: input.customer_email! }, now));
    const customer = await lockCustomer(trx, accountId, id);
    if (!customer) throw invalidParameter('activity.customer_id', 'names no customer of this account');
    return customer;
  }

  /**
   * Step 2 of the contract: the rule's earning limit still allows a credit at `time`. A rolling
   * limit holds for every window, not only the one ending at `time`: a credit dated before others
   * (back-dated, or committed after them while waiting for the customer's lock) must fit in the
   * windows ending after it too. The customer is locked, so every credit committed so far is seen.
   */
  private async withinLimit(trx: Kysely<Database>, rule: EarningRule, customerId: number, time: number) {
    const limit = rule.earning_limit;
    if (limit === null) return true;
    if (limit.type === 'lifetime') return (await countCredits(trx, customerId, rule.id)) < limit.max;
    const { unit, unit_count: count } = limit.rolling;
    const { after, upTo } = reachOf(time, unit, count);
    const reach = { customerId, ruleId: rule.id, after, upTo };
    // Every window that holds `time` lies in the reach: with fewer than max credits there, each has
    // room. The usual case, and one count, as cheap as the check of a single window.
    if ((await countCreditsIn(trx, reach)) < limit.max) return true;
    const credits = await findCreditTimesAround(trx, { ...reach, time, each: limit.max });
    return roomFor(time, credits.earlier, credits.later, limit.max, unit, count);
  }

  /** The activity that holds the input's token and distinct_id, with what it credited. */
  private async earlier(accountId: number, input: ActivityInput): Promise<Activity> {
    const type = await findActivityTypeByToken(this.db, accountId, input.token);
    const row = type && (await findActivityByDistinctId(this.db, accountId, type.id, input.distinct_id!));
    if (!type || !row)
      throw new DomainError('unavailable', 'this activity is being recorded concurrently; retry shortly');
    return toActivity(row, type, await findActivityTransactions(this.db, row.id));
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

function toActivity(row: ActivityRow, type: ActivityType, credits: PointsTransaction[]): Activity {
  return {
    id: row.id,
    customer_id: row.customer_id,
    token: type.token,
    distinct_id: row.distinct_id,
    properties: JSON.parse(row.properties) as Record<string, unknown>,
    created_on_origin_at: row.created_on_origin_at === null ? null : isoTime(row.created_on_origin_at),
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
    points_transactions: credits,
  };
}
