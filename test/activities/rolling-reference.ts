// A reference model of rolling earning limits, written apart from src/activities/window.ts: the
// window ending at `e` is (minus(e), e]; a credit at `t` is given when every window, wherever it
// ends, still holds at most `max` credits with it (issue 27).

export type Unit = 'day' | 'week' | 'month' | 'year';

const DAY_MS = 86_400_000;

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const monthDays = (y: number, m: number) => [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m]!;

/** `t` minus `count` units: days and weeks in fixed hours, months and years on the calendar, clamped to the month's end. */
export function minus(t: number, unit: Unit, count: number): number {
  if (unit === 'day') return t - count * DAY_MS;
  if (unit === 'week') return t - count * 7 * DAY_MS;
  const date = new Date(t);
  let year = date.getUTCFullYear();
  let month = date.getUTCMonth() - (unit === 'year' ? 12 * count : count);
  while (month < 0) {
    month += 12;
    year -= 1;
  }
  const day = Math.min(date.getUTCDate(), monthDays(year, month));
  return Date.UTC(year, month, day) + (t - Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
}

/** How many of `credits` the window ending at `end` holds. */
export function inWindow(credits: readonly number[], end: number, unit: Unit, count: number): number {
  const start = minus(end, unit, count);
  return credits.filter((c) => c > start && c <= end).length;
}

/**
 * The most of `credits` held by a window that also holds `t`, over every end. Between the ends
 * tried here a window only loses credits: its count rises only when its end reaches a credit, or
 * when its start moves back, which happens only at a midnight (from the 28th 23:59 to the 29th
 * 00:00 of March, one month back goes from February 28 23:59 to February 28 00:00). So the ends to
 * try are t, the credits after it, and every midnight until no window holds t any more.
 */
export function fullestWindowWith(t: number, credits: readonly number[], unit: Unit, count: number): number {
  const span =
    unit === 'day' ? count : unit === 'week' ? 7 * count : unit === 'month' ? 31 * (count + 1) : 366 * count + 31;
  const ends = [t, ...credits.filter((c) => c >= t)];
  for (let midnight = Math.ceil(t / DAY_MS) * DAY_MS; midnight <= t + span * DAY_MS; midnight += DAY_MS) {
    ends.push(midnight);
  }
  let most = 0;
  for (const end of ends) {
    if (end >= t && minus(end, unit, count) < t) most = Math.max(most, inWindow(credits, end, unit, count));
  }
  return most;
}

/** Which of `times` (in arrival order) a rule of `max` per `count` units credits. */
export function greedyCredits(times: readonly number[], max: number, unit: Unit, count: number): boolean[] {
  const credits: number[] = [];
  return times.map((t) => {
    if (fullestWindowWith(t, credits, unit, count) >= max) return false;
    credits.push(t);
    return true;
  });
}

/**
 * The most credits any window holds, over every end: each credit's fullest window with it (every
 * window that holds a credit is one that holds its earliest credit).
 */
export function fullestWindow(credits: readonly number[], unit: Unit, count: number): number {
  return Math.max(0, ...credits.map((c, i) => 1 + fullestWindowWith(c, credits.toSpliced(i, 1), unit, count)));
}
