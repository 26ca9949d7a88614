import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { JOB_THREAD, MAIN_THREAD, SharedWriteLock } from '../../src/storage/write-turns.js';

// The write lock the serving thread and the job thread of one process share (SQLite): real
// threads, the job thread's side from the built module (npm test builds first).

const BUILT = pathToFileURL(fileURLToPath(new URL('../../dist/storage/write-turns.js', import.meta.url))).href;

/** A job thread that takes the lock `rounds` times, each time adding one to the counter across a turn of its event loop. */
function jobThread(lock: SharedArrayBuffer, counter: SharedArrayBuffer, rounds: number, dieHolding = false): Worker {
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    import(${JSON.stringify(BUILT)}).then(async ({ SharedWriteLock, JOB_THREAD }) => {
      const lock = new SharedWriteLock(workerData.lock, JOB_THREAD);
      const counter = new Int32Array(workerData.counter);
      for (let i = 0; i < workerData.rounds; i++) {
        await lock.acquire();
        const seen = counter[0];
        await new Promise((resolve) => setImmediate(resolve));
        counter[0] = seen + 1;
        if (workerData.dieHolding) { parentPort.postMessage('holding'); return; }
        lock.release();
      }
      parentPort.postMessage('done');
    });`;
  return new Worker(code, { eval: true, workerData: { lock, counter, rounds, dieHolding } });
}

describe('the write lock of the two threads of a process', () => {
  it('lets one thread hold it at a time, across awaits, and both make progress', async () => {
    const buffer = SharedWriteLock.buffer();
    const counter = new SharedArrayBuffer(4);
    const count = new Int32Array(counter);
    const lock = new SharedWriteLock(buffer, MAIN_THREAD);
    const thread = jobThread(buffer, counter, 300);
    const done = new Promise((resolve, reject) => {
      thread.once('message', resolve);
      thread.once('error', reject);
    });
    for (let i = 0; i < 300; i++) {
      await lock.acquire();
      const seen = count[0]!;
      await new Promise((resolve) => setImmediate(resolve));
      count[0] = seen + 1;
      lock.release();
    }
    await done;
    await thread.terminate();
    // A lost update would mean both held it at once.
    expect(count[0]).toBe(600);
  }, 90_000);

  it('is given back when the thread holding it dies', async () => {
    const buffer = SharedWriteLock.buffer();
    const thread = jobThread(buffer, new SharedArrayBuffer(4), 1, true);
    await new Promise((resolve, reject) => {
      thread.once('message', resolve);
      thread.once('error', reject);
    });
    await thread.terminate();
    const lock = new SharedWriteLock(buffer, MAIN_THREAD);
    let taken = false;
    const acquiring = lock.acquire().then(() => {
      taken = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(taken).toBe(false);
    expect(SharedWriteLock.releaseFor(buffer, JOB_THREAD)).toBe(true);
    await acquiring;
    expect(taken).toBe(true);
    lock.release();
  });
});
