import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from '../storage/schema.js';
import { ensureServerSecret } from '../storage/server-secrets.js';
import { CursorCodec, type CursorKind, type Direction } from './cursor.js';

/** The `server_secrets` row holding the cursor HMAC key, shared by every server process. */
export const CURSOR_KEY_SECRET = 'cursor_hmac_key';

/** The page metadata of every list: opaque cursors, `""` when there is no such page. */
export interface PageMetadata {
  next_cursor: string;
  previous_cursor: string;
}

export interface Page<T> {
  items: T[];
  metadata: PageMetadata;
}

/**
 * Fetches up to `rows` rows of the list strictly beyond `boundary` in `direction` (all of them
 * when `boundary` is null), nearest first: `next` reads `id < boundary order by id desc`,
 * `previous` reads `id > boundary order by id asc`.
 */
export type FetchRows<T> = (direction: Direction, boundary: number | null, rows: number) => Promise<T[]>;

/** The codecs of a database's lists, all keyed by its one stored cursor key (loaded once, retried on failure). */
export class Cursors {
  private key: Promise<Buffer> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async codec(kind: CursorKind): Promise<CursorCodec> {
    return new CursorCodec(await this.loadKey(), kind);
  }

  private loadKey(): Promise<Buffer> {
    this.key ??= (async () => {
      const candidate = randomBytes(32).toString('base64');
      const stored = await ensureServerSecret(this.db, CURSOR_KEY_SECRET, candidate, this.clock.now());
      return Buffer.from(stored, 'base64');
    })().catch((error: unknown) => {
      this.key = null;
      throw error;
    });
    return this.key;
  }
}

export interface PageRequest<T> {
  codec: CursorCodec;
  accountId: number;
  limit: number;
  cursor: string | undefined;
  /**
   * The list's filters (a filtered codec binds cursors to them): an object built in a fixed key
   * order, absent filters left out, each value normalised (an instant as epoch ms), so that one
   * set of filters has one JSON form.
   */
  filters?: object;
  fetch: FetchRows<T>;
}

/**
 * One keyset page, id descending, of any list. Without a cursor: the newest rows. A `next`
 * cursor holds the last id of the page it came from, a `previous` cursor the first id. Rows
 * created or deleted between two requests never make a row that existed throughout appear twice
 * or be skipped.
 */
export async function keysetPage<T extends { id: number }>(request: PageRequest<T>): Promise<Page<T>> {
  const { codec, accountId, limit, fetch } = request;
  const filters = JSON.stringify(request.filters ?? {});
  const from = request.cursor === undefined ? null : codec.decode(request.cursor, accountId, filters);
  const direction: Direction = from?.direction ?? 'next';

  // One row more than asked tells whether a further page exists in the direction of travel.
  const fetched = await fetch(direction, from?.boundary ?? null, limit + 1);
  const more = fetched.length > limit;
  const items = fetched.slice(0, limit);
  if (direction === 'previous') items.reverse();
  const beyond = async (to: Direction, edge: number) => (await fetch(to, edge, 1)).length > 0;

  // The next (older) page. From a page fetched going `next`, the extra row tells; from a
  // `previous` page, a one-row probe does. An empty `previous` page (every newer row went away)
  // leads back to the rows at and below its boundary (`id < boundary + 1`), so the row the
  // client last saw is not skipped.
  let older: number | null;
  const last = items.at(-1);
  if (from?.direction !== 'previous') older = more && last ? last.id : null;
  else {
    const edge = last ? last.id : from.boundary + 1;
    older = (await beyond('next', edge)) ? edge : null;
  }

  // The previous (newer) page: none for the first page; a `previous` page knows from its extra
  // row; a `next` page probes. An empty `next` page leads back to the rows at and above its boundary.
  let newer: number | null;
  const first = items[0];
  if (from === null) newer = null;
  else if (from.direction === 'previous') newer = more && first ? first.id : null;
  else {
    const edge = first ? first.id : from.boundary - 1;
    newer = (await beyond('previous', edge)) ? edge : null;
  }

  const cursor = (edge: number | null, to: Direction) =>
    edge === null ? '' : codec.encode({ accountId, direction: to, boundary: edge }, filters);
  return { items, metadata: { next_cursor: cursor(older, 'next'), previous_cursor: cursor(newer, 'previous') } };
}
