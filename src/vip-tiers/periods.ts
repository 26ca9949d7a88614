import type { VipProgramType } from '../storage/schema.js';
import { DAY_MS } from '../time.js';

// The rules of the period programs (engine-contract.md, "VIP periods"), as pure functions of the
// time, a customer's earnings by UTC day and the account's tiers: the service stores what they
// give, and places customers again with them when time alone changes it.

export type { VipProgramType };
export const VIP_PROGRAM_TYPES = [
  'all_time',
  'calendar_year',
  'rolling_12_months',
] as const satisfies readonly VipProgramType[];
export type PeriodProgramType = Exclude<VipProgramType, 'all_time'>;

/** Points a customer earned on one UTC day (days since 1970-01-01). */
export interface DayEarning {
  readonly day: number;
  readonly points: number;
}

/** A tier as the rules need it. */
export interface RankedTier {
  readonly id: number;
  readonly milestone: number;
}

/** What a period program makes of a customer at one time. */
export interface PeriodPlacement {
  readonly vipTierId: number | null;
  /** Points earned in the period: this calendar year, or the last 12 months. */
  readonly progress: number;
  /** The last instant the tier is held unless more is earned (ms); null without a tier or when it never lapses. */
  readonly tierExpiresAt: number | null;
  /** The last instant of this calendar year (ms); null for a rolling program, whose period always ends now. */
  readonly periodEnd: number | null;
  /** Points still to earn before the tier expires to keep it past then; null when nothing is needed. */
  readonly retainDelta: number | null;
  /** When time alone next changes this placement (ms); null: never. */
  readonly recheckAt: number | null;
}

/** The UTC day (days since 1970-01-01) of a time. */
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);

/** The same date `years` later (or earlier), a 29 February becoming the 28th in a common year. */
export function addYears(day: number, years: number): number {
  const date = new Date(day * DAY_MS);
  const year = date.getUTCFullYear() + years;
  const month = date.getUTCMonth();
  const lastOfMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return dayOf(Date.UTC(year, month, Math.min(date.getUTCDate(), lastOfMonth)));
}

/**
 * The last day a credit of `day` counts in a rolling program: the same date a year later (a
 * credit counts through its anniversary, and leaves the window the day after).
 */
export const lastCountingDay = (day: number): number => addYears(day, 1);

/** The first day whose earnings count on `today` in a rolling program. */
export function rollingWindowStart(today: number): number {
  const start = addYears(today, -1);
  // A 29 February's anniversary is the 28th: on a 29 February, the 28th a year before is out.
  return lastCountingDay(start) < today ? start + 1 : start;
}

/** The first day whose earnings a placement at `now` reads. */
export function earningsFrom(type: PeriodProgramType, now: number): number {
  if (type === 'rolling_12_months') return rollingWindowStart(dayOf(now));
  return dayOf(Date.UTC(new Date(now).getUTCFullYear() - 1, 0, 1));
}

/** The tier `points` reach: the highest milestone at or below them (`tiers` ascending milestone). */
export function tierFor<T extends RankedTier>(tiers: readonly T[], points: number): T | undefined {
  let reached: T | undefined;
  for (const tier of tiers) if (tier.milestone <= points) reached = tier;
  return reached;
}

/**
 * A customer's placement at `now` from their earnings (ascending day, at least those from
 * `earningsFrom`) and the account's tiers (ascending milestone).
 */
export function placeInPeriod(
  type: PeriodProgramType,
  now: number,
  earnings: readonly DayEarning[],
  tiers: readonly RankedTier[],
): PeriodPlacement {
  return type === 'calendar_year' ? calendarYear(now, earnings, tiers) : rolling(now, earnings, tiers);
}

/**
 * A calendar-year program: progress is this year's points; a tier reached in a year is held to the
 * end of the next, so the tier is the better of what this year's and last year's points reach.
 */
function calendarYear(now: number, earnings: readonly DayEarning[], tiers: readonly RankedTier[]): PeriodPlacement {
  const year = new Date(now).getUTCFullYear();
  const thisYear = dayOf(Date.UTC(year, 0, 1));
  const lastYear = dayOf(Date.UTC(year - 1, 0, 1));
  const today = dayOf(now);
  let progress = 0;
  let lastYears = 0;
  for (const { day, points } of earnings) {
    if (day >= thisYear && day <= today) progress += points;
    else if (day >= lastYear && day < thisYear) lastYears += points;
  }
  const reached = tierFor(tiers, progress);
  const kept = tierFor(tiers, lastYears);
  const tier = kept && (!reached || kept.milestone > reached.milestone) ? kept : reached;
  const periodEnd = Date.UTC(year + 1, 0, 1) - 1;
  const placement = { vipTierId: tier?.id ?? null, progress, periodEnd, recheckAt: periodEnd + 1 };
  if (!tier) return { ...placement, tierExpiresAt: null, retainDelta: null };
  if (tier === reached) return { ...placement, tierExpiresAt: Date.UTC(year + 2, 0, 1) - 1, retainDelta: null };
  return { ...placement, tierExpiresAt: periodEnd, retainDelta: tier.milestone - progress };
}

/**
 * A rolling program: progress is the points of the last 12 months, the tier what they reach. It
 * expires the day enough of them leave the window to take progress below its milestone, unless
 * the customer earns the difference before.
 */
function rolling(now: number, earnings: readonly DayEarning[], tiers: readonly RankedTier[]): PeriodPlacement {
  const today = dayOf(now);
  const start = rollingWindowStart(today);
  const counted = earnings.filter((e) => e.day >= start && e.day <= today);
  const progress = counted.reduce((sum, e) => sum + e.points, 0);
  const tier = tierFor(tiers, progress);
  const recheckAt = counted.length === 0 ? null : (lastCountingDay(counted[0]!.day) + 1) * DAY_MS;
  const placement = { vipTierId: tier?.id ?? null, progress, periodEnd: null, recheckAt };
  if (!tier || tier.milestone === 0) return { ...placement, tierExpiresAt: null, retainDelta: null };
  let left = progress;
  for (let i = 0; i < counted.length; i++) {
    left -= counted[i]!.points;
    const last = lastCountingDay(counted[i]!.day);
    // Days that leave the window together (a 28 and a 29 February) are counted out together.
    if (i + 1 < counted.length && lastCountingDay(counted[i + 1]!.day) === last) continue;
    if (left < tier.milestone) {
      return { ...placement, tierExpiresAt: (last + 1) * DAY_MS - 1, retainDelta: tier.milestone - left };
    }
  }
  // Unreachable: every point leaves the window in the end, and the milestone is above 0.
  return { ...placement, tierExpiresAt: null, retainDelta: null };
}

/**
 * The tier after the customer's (or above `progress` without one): the lowest milestone above
 * both. The points to reach it are counted from `progress`.
 */
export function nextTier<T extends RankedTier>(
  tiers: readonly T[],
  currentTierId: number | null,
  progress: number,
): T | undefined {
  const current = tiers.find((tier) => tier.id === currentTierId);
  return tiers.find((tier) => tier.milestone > progress && (!current || tier.milestone > current.milestone));
}

/** A customer's placement as stored (see CustomersTable's vip_ columns). */
export interface StoredPlacement {
  readonly vipTierId: number | null;
  readonly vipProgress: number;
  readonly vipTierExpiresAt: number | null;
  readonly vipPeriodEnd: number | null;
  readonly vipRetainDelta: number | null;
  readonly vipRecheckAt: number | null;
  readonly vipProgramVersion: number;
}

/** The vip_ columns of a customer row, in the domain's names. */
export function toStoredPlacement(row: {
  vip_tier_id: number | null;
  vip_progress: number;
  vip_tier_expires_at: number | null;
  vip_period_end: number | null;
  vip_retain_delta: number | null;
  vip_recheck_at: number | null;
  vip_program_version: number;
}): StoredPlacement {
  const orNull = (value: number | null) => (value === null ? null : Number(value));
  return {
    vipTierId: orNull(row.vip_tier_id),
    vipProgress: Number(row.vip_progress),
    vipTierExpiresAt: orNull(row.vip_tier_expires_at),
    vipPeriodEnd: orNull(row.vip_period_end),
    vipRetainDelta: orNull(row.vip_retain_delta),
    vipRecheckAt: orNull(row.vip_recheck_at),
    vipProgramVersion: Number(row.vip_program_version),
  };
}
