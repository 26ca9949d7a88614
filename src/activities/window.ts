// The rolling windows of earning limits: `(t − unit_count units, t]`, where a day is 24 hours, a
// week 7 days, and months and years are calendar steps back in UTC.

export type WindowUnit = 'day' | 'week' | 'month' | 'year';

const DAY_MS = 86_400_000;
/** The earliest instant a JavaScript Date holds: a window reaching past it covers all time. */
const EARLIEST = -8_640_000_000_000_000;

/**
 * The exclusive start of the window that ends at `t` (epoch ms). A month back from the 31st is
 * the last day of the shorter month (March 31 → February 28 or 29), a year back from February 29
 * is February 28; the time of day is kept.
 */
export function windowStart(t: number, unit: WindowUnit, count: number): number {
  if (unit === 'day' || unit === 'week') return Math.max(EARLIEST, t - count * (unit === 'day' ? DAY_MS : 7 * DAY_MS));
  const date = new Date(t);
  const months = date.getUTCFullYear() * 12 + date.getUTCMonth() - count * (unit === 'year' ? 12 : 1);
  const year = Math.floor(months / 12);
  const month = months - year * 12;
  const start = new Date(t);
  // Day 1 first, so that setting the month never overflows into the next one.
  start.setUTCDate(1);
  start.setUTCFullYear(year, month, Math.min(date.getUTCDate(), daysInMonth(year, month)));
  const ms = start.getTime();
  return Number.isNaN(ms) ? EARLIEST : Math.max(EARLIEST, ms);
}

function daysInMonth(year: number, month: number): number {
  const last = new Date(0);
  last.setUTCFullYear(year, month + 1, 0);
  return last.getUTCDate();
}
