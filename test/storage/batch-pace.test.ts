import { describe, expect, it } from 'vitest';
import { BATCH_MS, BatchPace, type PaceTime } from '../../src/storage/batch-pace.js';

// Batches of long background work sized by time (src/storage/batch-pace.ts): a batch that takes
// longer than BATCH_MS makes the next smaller, a quick one makes it larger up to the maximum, and
// the work rests as long as each batch took. The pace's time is a fake one here, moved by the test.

/** A clock the test moves: `work` as a batch holding the lock, and the rests the pace asks for. */
class FakeTime implements PaceTime {
  at = 0;
  readonly rests: number[] = [];

  now(): number {
    return this.at;
  }

  async sleep(ms: number): Promise<void> {
    this.rests.push(ms);
    this.at += ms;
  }

  work(ms: number): void {
    this.at += ms;
  }
}

/** Runs `batches` batches that cost `msPerRow` a row; the sizes the pace took. */
async function run(pace: BatchPace, time: FakeTime, batches: number, msPerRow: number): Promise<number[]> {
  const sizes: number[] = [];
  for (let i = 0; i < batches; i++) {
    const rows = pace.next();
    sizes.push(rows);
    time.work(rows * msPerRow);
    await pace.rest(rows);
  }
  return sizes;
}

describe('a batch pace', () => {
  it('shrinks batches that take longer than BATCH_MS halfway to the size that fits, and rests as long as each took', async () => {
    const time = new FakeTime();
    // 1 ms a row: BATCH_MS rows take BATCH_MS.
    const sizes = await run(new BatchPace(200, 50, time), time, 5, 1);
    expect(sizes).toEqual([50, 30, 20, 15, 13]);
    expect(time.rests).toEqual([50, 30, 20, 15, 13]);
    expect(BATCH_MS).toBe(10);
  });

  it('grows quick batches up to its maximum, and never past it', async () => {
    const time = new FakeTime();
    // 0.01 ms a row: 50 rows take 0.5 ms, and 1,000 would fit in BATCH_MS.
    const sizes = await run(new BatchPace(300, 50, time), time, 4, 0.01);
    expect(sizes).toEqual([50, 300, 300, 300]);
  });

  it('never goes below ten rows a batch, nor above a maximum under ten', async () => {
    const time = new FakeTime();
    expect(await run(new BatchPace(200, 20, time), time, 4, 5)).toEqual([20, 11, 10, 10]);
    const small = new FakeTime();
    expect(await run(new BatchPace(3, 50, small), small, 2, 100)).toEqual([3, 3]);
  });

  it('keeps the size after a short last batch (fewer rows than it asked for)', async () => {
    const time = new FakeTime();
    const pace = new BatchPace(200, 50, time);
    expect(pace.next()).toBe(50);
    time.work(40);
    await pace.rest(3);
    expect(pace.next()).toBe(50);
    expect(time.rests).toEqual([40]);
  });

  it('refuses a maximum under one row, which would never get through its work', () => {
    expect(() => new BatchPace(0)).toThrow(RangeError);
  });
});
