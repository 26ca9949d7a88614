import { describe, expect, it } from 'vitest';
import { BATCH_MS, BatchPace } from '../../src/storage/batch-pace.js';

// Batches of long background work sized by time (src/storage/batch-pace.ts): a batch that takes
// longer than BATCH_MS makes the next smaller, a quick one makes it larger up to the maximum, and
// the work rests as long as each batch took.

/** Holds the thread for `ms`, as a transaction holds the write lock. */
function work(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
}

/** Runs `batches` batches that cost `msPerRow` each row; the sizes taken, and each rest's length. */
async function run(pace: BatchPace, batches: number, msPerRow: number): Promise<{ sizes: number[]; rests: number[] }> {
  const sizes: number[] = [];
  const rests: number[] = [];
  for (let i = 0; i < batches; i++) {
    const rows = pace.next();
    sizes.push(rows);
    work(rows * msPerRow);
    const resting = performance.now();
    await pace.rest(rows);
    rests.push(performance.now() - resting);
  }
  return { sizes, rests };
}

describe('a batch pace', () => {
  it('shrinks batches that take longer than BATCH_MS towards the size that fits', async () => {
    // 1 ms a row: 50 rows take 50 ms, and BATCH_MS rows would take BATCH_MS.
    const { sizes, rests } = await run(new BatchPace(200), 6, 1);
    expect(sizes[0]).toBe(50);
    for (let i = 1; i < sizes.length; i++) expect(sizes[i]!).toBeLessThanOrEqual(sizes[i - 1]!);
    expect(sizes[1]!).toBeLessThan(sizes[0]!);
    expect(sizes.at(-1)!).toBeLessThanOrEqual(BATCH_MS * 1.5);
    // Each rest lasts about as long as its batch worked (timers fire no earlier than asked).
    for (const [i, rest] of rests.entries()) expect(rest).toBeGreaterThanOrEqual(sizes[i]! * 1 - 2);
  });

  it('grows quick batches up to its maximum, and never past it', async () => {
    const { sizes } = await run(new BatchPace(120), 6, 0.001);
    expect(sizes[1]!).toBeGreaterThan(sizes[0]!);
    expect(Math.max(...sizes)).toBe(120);
  });

  it('never goes below ten rows a batch', async () => {
    const { sizes } = await run(new BatchPace(200, 20), 4, 5);
    expect(Math.min(...sizes)).toBe(10);
    expect(sizes.at(-1)).toBe(10);
  });

  it('keeps the size after a short last batch (fewer rows than it asked for)', async () => {
    const pace = new BatchPace(200);
    expect(pace.next()).toBe(50);
    work(40);
    await pace.rest(3);
    expect(pace.next()).toBe(50);
  });
});
