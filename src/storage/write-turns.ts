import cluster, { type Worker } from 'node:cluster';

/**
 * The turn to write one SQLite file, for the processes of WORKERS=N: taken before a commit group
 * begins, given back once it committed.
 *
 * SQLite lets one connection write at a time. Without turns, the workers raced for the file's
 * write lock: a worker that found it taken retried after 1–16 ms, blind to how long the other
 * would keep it, and a request could lose that race many times in a row (p99 of 263–424 ms at
 * 50 connections, WORKERS=2, against 22–40 ms for one process). The primary hands the turn out in
 * the order the workers ask for it, so a worker waits for at most the groups queued before its
 * own, and its requests gather into one group meanwhile.
 */
export interface WriteTurn {
  acquire(): Promise<void>;
  release(): void;
  /** Whether someone waits for the turn now (the holder then ends its commit group sooner). */
  wanted?(): boolean;
}

interface TurnMessage {
  loyaltyWriteTurn: 'acquire' | 'release' | 'granted';
}

const isTurnMessage = (message: unknown): message is TurnMessage =>
  typeof message === 'object' && message !== null && 'loyaltyWriteTurn' in message;

/** A worker's side: asks the primary for the turn and waits for it. */
export function clusterWriteTurn(): WriteTurn {
  const granted: Array<() => void> = [];
  process.on('message', (message: unknown) => {
    if (isTurnMessage(message) && message.loyaltyWriteTurn === 'granted') granted.shift()?.();
  });
  const send = (message: TurnMessage) => process.send?.(message);
  return {
    acquire: () =>
      new Promise<void>((resolve) => {
        granted.push(resolve);
        send({ loyaltyWriteTurn: 'acquire' });
      }),
    release: () => send({ loyaltyWriteTurn: 'release' }),
  };
}

/** The primary's side: one turn, handed to the workers in the order they ask; a worker that dies gives it back. */
export function handOutWriteTurns(): void {
  const waiting: Worker[] = [];
  let holder: Worker | null = null;
  const next = () => {
    const worker = waiting.shift() ?? null;
    holder = worker;
    if (worker === null) return;
    // A worker that died while waiting is skipped, as is one whose channel closed before its exit
    // was seen (the send then fails through its callback, not as an error the primary would throw).
    if (worker.isDead() || !worker.isConnected()) return next();
    worker.send({ loyaltyWriteTurn: 'granted' } satisfies TurnMessage, undefined, (error) => {
      if (error && holder === worker) next();
    });
  };
  cluster.on('message', (worker, message: unknown) => {
    if (!isTurnMessage(message)) return;
    if (message.loyaltyWriteTurn === 'acquire') {
      waiting.push(worker);
      if (holder === null) next();
    } else if (message.loyaltyWriteTurn === 'release' && holder === worker) {
      next();
    }
  });
  cluster.on('exit', (worker) => {
    const index = waiting.indexOf(worker);
    if (index >= 0) waiting.splice(index, 1);
    if (holder === worker) next();
  });
}

/** Who holds a process's SharedWriteLock: 0 when nobody does. */
export const LOCK_FREE = 0;
export const MAIN_THREAD = 1;
export const JOB_THREAD = 2;
type Holder = typeof MAIN_THREAD | typeof JOB_THREAD;

/** The lock's words: who holds it, who goes first when both want it, and each thread's wish. */
const HOLDER = 0;
const PRIORITY = 1;
const wants = (holder: Holder) => 1 + holder;
/** A wait's net: a wish left behind by a thread that died is looked past after this long. */
const WAIT_NET_MS = 50;

/**
 * The turn to write one SQLite file for the two threads of one process (the serving thread and
 * the job thread, each with its own connection): words of shared memory, taken with
 * compare-and-swap and waited for without blocking either event loop (Atomics.waitAsync), then,
 * with WORKERS=N, the process's turn from the primary (`upstream`).
 *
 * When both threads want the lock they take turns: each release gives the other thread priority
 * if it is waiting. Without that the serving thread, whose commit groups follow one another under
 * load, would take the lock back before the job thread had woken; without any lock, the threads
 * met at SQLite's own, which a connection finding it taken retries blind after 1–16 ms.
 */
export class SharedWriteLock implements WriteTurn {
  private readonly cell: Int32Array;
  private readonly other: Holder;

  constructor(
    buffer: SharedArrayBuffer,
    private readonly holder: Holder,
    private readonly upstream?: WriteTurn,
  ) {
    this.cell = new Int32Array(buffer);
    this.other = holder === MAIN_THREAD ? JOB_THREAD : MAIN_THREAD;
  }

  /** The shared memory of a new lock: hand it to the other thread. */
  static buffer(): SharedArrayBuffer {
    return new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT);
  }

  async acquire(): Promise<void> {
    const cell = this.cell;
    Atomics.store(cell, wants(this.holder), 1);
    for (;;) {
      const yields = Atomics.load(cell, PRIORITY) === this.other && Atomics.load(cell, wants(this.other)) === 1;
      if (!yields && Atomics.compareExchange(cell, HOLDER, LOCK_FREE, this.holder) === LOCK_FREE) break;
      const seen = Atomics.load(cell, HOLDER);
      const wait = Atomics.waitAsync(cell, HOLDER, seen, WAIT_NET_MS);
      if (wait.async) await wait.value;
    }
    Atomics.store(cell, wants(this.holder), 0);
    Atomics.notify(cell, HOLDER);
    try {
      await this.upstream?.acquire();
    } catch (error) {
      this.free();
      throw error;
    }
  }

  release(): void {
    this.upstream?.release();
    this.free();
  }

  /** Whether the other thread waits for the lock. */
  wanted(): boolean {
    return Atomics.load(this.cell, wants(this.other)) === 1;
  }

  /**
   * Forgets a thread that died: its wish, and the lock if it held it; true when it held it.
   * Called by the thread that saw it die.
   */
  static releaseFor(buffer: SharedArrayBuffer, holder: Holder): boolean {
    const cell = new Int32Array(buffer);
    Atomics.store(cell, wants(holder), 0);
    const held = Atomics.compareExchange(cell, HOLDER, holder, LOCK_FREE) === holder;
    Atomics.notify(cell, HOLDER);
    return held;
  }

  private free(): void {
    Atomics.store(this.cell, PRIORITY, this.other);
    Atomics.store(this.cell, HOLDER, LOCK_FREE);
    Atomics.notify(this.cell, HOLDER);
  }
}

/** The messages of a turn asked through a MessagePort (see portWriteTurn). */
type PortTurnMessage = { writeTurn: 'acquire' | 'release' | 'granted' };

/**
 * A job thread's side of the process's turn from the primary (WORKERS=N): only the serving thread
 * talks to the primary, so the job thread asks it through `port` (see serveWriteTurn).
 */
export function portWriteTurn(port: MessagePortLike): WriteTurn {
  const granted: Array<() => void> = [];
  port.on('message', (message: unknown) => {
    if ((message as PortTurnMessage)?.writeTurn === 'granted') granted.shift()?.();
  });
  return {
    acquire: () =>
      new Promise<void>((resolve) => {
        granted.push(resolve);
        port.postMessage({ writeTurn: 'acquire' } satisfies PortTurnMessage);
      }),
    release: () => port.postMessage({ writeTurn: 'release' } satisfies PortTurnMessage),
  };
}

/**
 * The serving thread's side of portWriteTurn: takes the primary's turn for the job thread and
 * gives it back. `close()` (the job thread died) gives back a turn it held, and one it was still
 * waiting for as soon as it comes.
 */
export function serveWriteTurn(port: MessagePortLike, upstream: WriteTurn): { close(): void } {
  let held = false;
  let closed = false;
  port.on('message', (message: unknown) => {
    const asked = (message as PortTurnMessage)?.writeTurn;
    if (asked === 'acquire') {
      void upstream.acquire().then(() => {
        if (closed) return upstream.release();
        held = true;
        port.postMessage({ writeTurn: 'granted' } satisfies PortTurnMessage);
      });
    } else if (asked === 'release' && held) {
      held = false;
      upstream.release();
    }
  });
  return {
    close: () => {
      closed = true;
      if (held) {
        held = false;
        upstream.release();
      }
    },
  };
}

/** What portWriteTurn and serveWriteTurn need of a MessagePort. */
export interface MessagePortLike {
  on(event: 'message', listener: (message: unknown) => void): unknown;
  postMessage(message: unknown): void;
}
