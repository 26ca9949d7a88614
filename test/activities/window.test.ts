import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { reachOf, roomFor, windowEnd, windowStart } from '../../src/activities/window.js';
import { fullestWindowWith, greedyCredits, minus, type Unit } from './rolling-reference.js';

// The arithmetic of rolling windows (src/activities/window.ts), on its own, against the reference
// model of rolling-reference.ts: where the windows holding an instant end, and whether a credit
// at `t` keeps every window within its limit.

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const units: Unit[] = ['day', 'week', 'month', 'year'];

// Month ends, leap days and year ends, on both sides.
const DAYS = [
  '2023-01-31',
  '2023-02-28',
  '2023-03-28',
  '2023-03-31',
  '2023-12-31',
  '2024-01-29',
  '2024-01-31',
  '2024-02-28',
  '2024-02-29',
  '2024-03-01',
  '2024-03-29',
  '2024-03-31',
  '2024-04-30',
  '2024-12-31',
  '2025-02-28',
  '2025-03-01',
].map((day) => Date.parse(`${day}T00:00:00Z`));

/** An instant near a month end (whole hours, or a millisecond off one), or anywhere from 1900 to 2200. */
const instant = fc.oneof(
  fc
    .tuple(fc.constantFrom(...DAYS), fc.integer({ min: -48, max: 48 }), fc.constantFrom(0, 1, -1, 1_800_000))
    .map(([day, hours, ms]) => day + hours * HOUR_MS + ms),
  fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2200, 0, 1) }),
);

describe('windowEnd: the last end of a window that holds x', () => {
  it('starts its window before x, and every later end starts at or after x', () => {
    fc.assert(
      fc.property(
        instant,
        fc.constantFrom(...units),
        fc.integer({ min: 1, max: 25 }),
        fc.array(fc.integer({ min: 1, max: 400 * DAY_MS }), { maxLength: 20 }),
        (x, unit, count, offsets) => {
          const end = windowEnd(x, unit, count);
          expect(windowStart(end, unit, count)).toBeLessThan(x);
          // Just after it, every hour (and the millisecond on either side) for three days, and further.
          const later = [1, ...offsets];
          for (let hour = 0; hour <= 72; hour++) later.push(hour * HOUR_MS - (end % HOUR_MS), hour * HOUR_MS + 1);
          for (const offset of later) {
            if (offset > 0) expect(windowStart(end + offset, unit, count)).toBeGreaterThanOrEqual(x);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never falls as x rises', () => {
    fc.assert(
      fc.property(instant, instant, fc.constantFrom(...units), fc.integer({ min: 1, max: 25 }), (a, b, unit, count) => {
        const [x, y] = a <= b ? [a, b] : [b, a];
        expect(windowEnd(x, unit, count)).toBeLessThanOrEqual(windowEnd(y, unit, count));
      }),
      { numRuns: 500 },
    );
  });

  it.each([
    // x, unit, count, the last end whose window holds x
    ['2025-03-01T10:00:00.000Z', 'day', 1, '2025-03-02T09:59:59.999Z'],
    ['2025-03-01T10:00:00.000Z', 'week', 2, '2025-03-15T09:59:59.999Z'],
    ['2025-01-15T10:00:00.000Z', 'month', 1, '2025-02-15T09:59:59.999Z'],
    // Every day of February starts its window on a day of January before the 31st.
    ['2025-01-31T10:00:00.000Z', 'month', 1, '2025-02-28T23:59:59.999Z'],
    // February 28 is its month's last day: March 28 to 31 all start their window on it.
    ['2025-02-28T10:00:00.000Z', 'month', 1, '2025-03-31T09:59:59.999Z'],
    ['2025-02-28T00:00:00.000Z', 'month', 1, '2025-03-27T23:59:59.999Z'],
    ['2024-02-29T10:00:00.000Z', 'year', 1, '2025-02-28T23:59:59.999Z'],
    ['2023-02-28T10:00:00.000Z', 'year', 1, '2024-02-29T09:59:59.999Z'],
    ['2025-03-01T00:00:00.000Z', 'month', 1, '2025-03-31T23:59:59.999Z'],
  ] as const)('windowEnd(%s, %s, %i) is %s', (x, unit, count, end) => {
    expect(new Date(windowEnd(Date.parse(x), unit, count)).toISOString()).toBe(end);
  });

  it('covers all time for a window longer than a Date reaches', () => {
    const x = Date.parse('2025-03-01T00:00:00Z');
    expect(windowEnd(x, 'year', 2_147_483_647)).toBe(8_640_000_000_000_000);
    expect(windowEnd(x, 'week', 2_147_483_647)).toBe(8_640_000_000_000_000);
    expect(windowStart(x, 'month', 2_147_483_647)).toBeLessThan(-8_640_000_000_000_000);
  });
});

describe('windowStart agrees with the reference model', () => {
  it('on instants near month ends and anywhere', () => {
    fc.assert(
      fc.property(instant, fc.constantFrom(...units), fc.integer({ min: 1, max: 25 }), (t, unit, count) => {
        expect(windowStart(t, unit, count)).toBe(minus(t, unit, count));
      }),
      { numRuns: 500 },
    );
  });
});

describe('roomFor: a credit at t keeps every window within max', () => {
  // Credits a rule gave (by the model), then one more instant: roomFor, reading only what reachOf
  // bounds and only the `max` nearest on each side, must decide as the model does.
  it('decides as the model on every window, in any order and dating', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...units),
        fc.integer({ min: 1, max: 2 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(instant, { maxLength: 14 }),
        instant,
        (unit, count, max, times, t) => {
          const given = greedyCredits(times, max, unit, count);
          const credits = times.filter((_, i) => given[i]);
          const { after, upTo } = reachOf(t, unit, count);
          const earlier = credits
            .filter((c) => c > after && c <= t)
            .sort((a, b) => b - a)
            .slice(0, max);
          const later = credits
            .filter((c) => c > t && c <= upTo)
            .sort((a, b) => a - b)
            .slice(0, max);
          const model = fullestWindowWith(t, credits, unit, count) < max;
          expect(roomFor(t, earlier, later, max, unit, count)).toBe(model);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it.each([
    // unit, count, max, credits, t, room?
    ['day', 1, 2, ['2025-03-01T10:00Z', '2025-03-01T11:00Z'], '2025-03-01T09:00Z', false],
    // The window ending at the later credit starts at 09:00 and holds all three.
    ['day', 1, 2, ['2025-03-01T10:00Z', '2025-03-02T09:00Z'], '2025-03-01T11:00Z', false],
    // No window of a day holds both credits: each holds one of them with t.
    ['day', 1, 2, ['2025-03-01T10:00Z', '2025-03-02T11:00Z'], '2025-03-01T12:00Z', true],
    ['day', 1, 2, ['2025-03-01T10:00Z', '2025-03-02T11:00Z'], '2025-03-01T11:00Z', true],
    ['day', 1, 1, ['2025-03-02T10:00Z'], '2025-03-01T10:00Z', true],
    ['day', 1, 1, ['2025-03-02T10:00Z'], '2025-03-01T10:00:00.001Z', false],
    // The window ending March 29 00:00 starts February 28 00:00: it holds both.
    ['month', 1, 1, ['2025-03-28T23:00Z'], '2025-02-28T00:30Z', false],
    ['month', 1, 1, ['2025-03-28T23:00Z'], '2025-02-27T23:30Z', true],
    ['year', 1, 1, ['2024-02-29T10:00Z'], '2025-02-28T09:00Z', false],
    ['year', 1, 1, ['2024-02-29T10:00Z'], '2025-03-01T00:00Z', true],
  ] as const)('%s×%i max %i, credits %j: a credit at %s fits: %s', (unit, count, max, credits, t, room) => {
    const times = credits.map((c) => Date.parse(c));
    const at = Date.parse(t);
    expect(fullestWindowWith(at, times, unit, count) < max).toBe(room);
    const earlier = times.filter((c) => c <= at).sort((a, b) => b - a);
    const later = times.filter((c) => c > at).sort((a, b) => a - b);
    expect(roomFor(at, earlier, later, max, unit, count)).toBe(room);
  });
});
