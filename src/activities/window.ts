// The rolling windows of earning limits: `(t − unit_count units, t]`, where a day is 24 hours, a
// week 7 days, and months and years are calendar steps back in UTC.
//
// A rolling limit holds for every window, wherever it ends (issue 27): activities arrive, commit
// and are dated in any order, so a credit at `t` must fit in every window that contains `t`, not
// only in the one that ends at `t`. `roomFor` decides that from the credits `reachOf(t)` bounds.

export type WindowUnit = 'day' | 'week' | 'month' | 'year';

const DAY_MS = 86_400_000;
/**
 * One millisecond before the earliest instant a JavaScript Date holds: a window reaching past it
 * covers all time, that instant included (a start equal to it would leave out an activity dated
 * at it, and no window would count such an activity).
 */
const BEFORE_ALL = -8_640_000_000_000_001;
/** The latest instant a JavaScript Date holds: a window ending past it ends at it. */
const LATEST = 8_640_000_000_000_000;

/**
 * The exclusive start of the window that ends at `t` (epoch ms). A month back from the 31st is
 * the last day of the shorter month (March 31 → February 28 or 29), a year back from February 29
 * is February 28; the time of day is kept.
 */
export function windowStart(t: number, unit: WindowUnit, count: number): number {
  if (unit === 'day' || unit === 'week') return Math.max(BEFORE_ALL, t - count * fixedLength(unit));
  const date = new Date(t);
  const months = date.getUTCFullYear() * 12 + date.getUTCMonth() - count * (unit === 'year' ? 12 : 1);
  const year = Math.floor(months / 12);
  const month = months - year * 12;
  const start = new Date(t);
  // Day 1 first, so that setting the month never overflows into the next one.
  start.setUTCDate(1);
  start.setUTCFullYear(year, month, Math.min(date.getUTCDate(), daysInMonth(year, month)));
  const ms = start.getTime();
  return Number.isNaN(ms) ? BEFORE_ALL : Math.max(BEFORE_ALL, ms);
}

/**
 * The last instant whose window starts before `x` (epoch ms): the latest end of a window that
 * holds `x`. No later instant's window holds `x`. On the calendar an earlier one's may not either:
 * windowStart goes back at the midnight that starts a clamped day (March 28 12:00 starts at
 * February 28 12:00, March 29 00:00 at February 28 00:00), so the ends of the windows holding `x`
 * need not form one interval; this is the last of them.
 */
export function windowEnd(x: number, unit: WindowUnit, count: number): number {
  if (unit === 'day' || unit === 'week') return Math.min(LATEST, x + count * fixedLength(unit) - 1);
  // A window ending in month M + count starts in month M (of x); one ending later starts after x.
  const date = new Date(x);
  const xYear = date.getUTCFullYear();
  const xMonth = date.getUTCMonth();
  const day = date.getUTCDate();
  const timeOfDay = x - utc(xYear, xMonth, day);
  const months = xYear * 12 + xMonth + count * (unit === 'year' ? 12 : 1);
  const year = Math.floor(months / 12);
  const month = months - year * 12;
  const lastDay = daysInMonth(year, month);
  const xLastDay = daysInMonth(xYear, xMonth);
  let end: number;
  if (day > lastDay) {
    // Every day of that month starts its window on a day of x's month before x's day.
    end = utc(year, month + 1, 1) - 1;
  } else if (day === xLastDay && timeOfDay > 0) {
    // x is on the last day of its month: the days clamped to it (up to the month's last) start there.
    end = utc(year, month, lastDay) + timeOfDay - 1;
  } else {
    end = utc(year, month, day) + timeOfDay - 1;
  }
  return Number.isNaN(end) ? LATEST : Math.min(LATEST, end);
}

/** Where every window that contains `t` lies: after `after`, up to `upTo` (both epoch ms). */
export function reachOf(t: number, unit: WindowUnit, count: number): { after: number; upTo: number } {
  const start = windowStart(t, unit, count);
  // On the calendar a later end can start earlier on the same day (see windowEnd); never earlier.
  const after = unit === 'day' || unit === 'week' ? start : Math.max(BEFORE_ALL, start - DAY_MS);
  return { after, upTo: windowEnd(t, unit, count) };
}

/**
 * Whether a credit at `t` keeps every window within `max` credits. `earlier` are the times of the
 * credits in (reachOf(t).after, t], nearest first; `later` those in (t, reachOf(t).upTo], nearest
 * first. Each list may stop after its `max` nearest: the rest cannot change the answer.
 *
 * A window holding `t` holds the nearest credits on each side of it. For each `x` (t, or a credit
 * before it), the window that holds `x` and reaches furthest ends at windowEnd(x); the windows
 * holding t are all counted by the `x` that is the earliest credit they hold.
 */
export function roomFor(
  t: number,
  earlier: readonly number[],
  later: readonly number[],
  max: number,
  unit: WindowUnit,
  count: number,
): boolean {
  let after = later.length;
  for (let before = 0; before <= earlier.length; before++) {
    const x = before === 0 ? t : earlier[before - 1]!;
    const end = windowEnd(x, unit, count);
    // windowEnd only falls as x does: once no window holds both x and t, none holds an earlier one.
    if (end < t) break;
    while (after > 0 && later[after - 1]! > end) after--;
    if (before + after >= max) return false;
  }
  return true;
}

/** The length of a day or a week, in ms. */
function fixedLength(unit: 'day' | 'week'): number {
  return unit === 'day' ? DAY_MS : 7 * DAY_MS;
}

/** Midnight UTC of a day (a day past the month's end rolls over), any year (Date.UTC maps 0–99 to 1900s). */
function utc(year: number, month: number, day: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  return date.getTime();
}

function daysInMonth(year: number, month: number): number {
  const last = new Date(0);
  last.setUTCFullYear(year, month + 1, 0);
  return last.getUTCDate();
}
