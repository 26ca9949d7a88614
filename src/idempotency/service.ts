import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { DomainError } from '../errors.js';
import type { Database } from '../storage/schema.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import { claimKey, findKey, purgeKeys, storeAnswer } from './repository.js';

/** How long a key replays its first answer. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** A request's key, and what identifies the request it was first sent with. */
export interface IdempotentRequest {
  accountId: number;
  /** The `Idempotency-Key` header, when sent. */
  key: string | undefined;
  /** The route and its body, as `fingerprint()` makes them. */
  fingerprint: string;
}

/** An answer as sent: the status and the serialised body (byte for byte the same on a replay). */
export interface Answer {
  status: number;
  body: string;
}

/** Thrown inside the transaction to roll it back when the key already has an answer. */
class KeyTaken extends Error {}

/**
 * The `Idempotency-Key` header of the engine contract: within 24 hours, the same key from the
 * same account with the same request replays the first answer and writes nothing; with another
 * request it is `409 idempotency_key_reused`. The key is claimed in the transaction of the write
 * it guards, so concurrent requests with one key write once: on PostgreSQL the second claim waits
 * on the first's uncommitted row, on SQLite on the write lock. Only successful answers are kept:
 * a refused request rolls its claim back with everything else, so a retry is evaluated anew.
 * Keys past their 24 hours are deleted by purgeExpired (timed work of the server, not of requests).
 */
export class IdempotencyService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
  ) {}

  /**
   * Runs `work` in one unit of work and answers `status` with `serialize(result)`, or, when the
   * key already has an answer, replays it without running anything.
   */
  async run<T>(
    request: IdempotentRequest,
    status: number,
    work: (w: Work) => Promise<T>,
    serialize: (result: T) => string,
  ): Promise<Answer> {
    const { accountId, key } = request;
    if (key === undefined) {
      const result = await this.uow.run(work);
      return { status, body: serialize(result) };
    }
    const hash = createHash('sha256').update(request.fingerprint).digest('hex');
    try {
      return await this.uow.run(async (w) => {
        if (!(await claimKey(w.trx, accountId, key, hash, w.now, w.now - IDEMPOTENCY_TTL_MS))) throw new KeyTaken();
        const answer = { status, body: serialize(await work(w)) };
        await storeAnswer(w.trx, accountId, key, answer.status, answer.body);
        return answer;
      });
    } catch (error) {
      if (!(error instanceof KeyTaken)) throw error;
    }
    const stored = await findKey(this.db, accountId, key);
    if (stored?.requestHash !== hash) {
      throw new DomainError(
        'idempotency_key_reused',
        'this Idempotency-Key was used with another request in the last 24 hours; use a new key for a new request',
      );
    }
    if (stored.status === null || stored.body === null) {
      throw new DomainError('unavailable', 'the first request with this Idempotency-Key is still being answered');
    }
    return { status: stored.status, body: stored.body };
  }

  /** Deletes the keys more than 24 hours old (they replay nothing any more); how many it deleted. */
  purgeExpired(): Promise<number> {
    return this.uow.run((w) => purgeKeys(w.trx, w.now - IDEMPOTENCY_TTL_MS));
  }
}

/** What identifies a request for its key: the route and the body, whatever the order of its keys. */
export function fingerprint(route: string, body: unknown): string {
  return `${route}\n${canonicalJson(body)}`;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}
