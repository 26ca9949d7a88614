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
