import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../errors.js';

/** Which way a cursor pages: `next` to older rows (smaller ids), `previous` to newer ones. */
export type Direction = 'next' | 'previous';

/** Where a page starts: the rows strictly beyond `boundary` in `direction`, for one account. */
export interface Cursor {
  accountId: number;
  direction: Direction;
  boundary: number;
}

/** What a codec's cursors page through: a resource, and whether its lists take filters. */
export interface CursorKind {
  /** Binds the MAC to one resource, so a cursor of one list is never accepted by another. */
  resource: string;
  /** Lists with filters: a cursor carries a digest of its filters and refuses other ones. */
  filtered: boolean;
}

export const EARNING_RULES_CURSOR: CursorKind = { resource: 'earning_rules', filtered: false };
/** The console's list of earning rules: disabled ones too. */
export const ALL_EARNING_RULES_CURSOR: CursorKind = { resource: 'earning_rules_all', filtered: false };

// Layout: version, direction, account id, boundary id (unsigned 64-bit big-endian), for a filtered
// list the first 8 bytes of SHA-256 of its filters, then HMAC-SHA256 of all that. Earning rules:
// 50 bytes, 67 base64url characters; filtered lists: 58 bytes, 78 characters. The payload is
// readable by anyone (it holds nothing the caller does not know); the MAC makes it unforgeable.
const VERSION = 1;
const BASE_BYTES = 18;
const FILTER_BYTES = 8;
const MAC_BYTES = 32;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const DIRECTIONS: readonly Direction[] = ['next', 'previous'];

/** Encodes and checks the cursors of one kind of list with one HMAC key (the same in every process). */
export class CursorCodec {
  private readonly context: Buffer;
  private readonly payloadBytes: number;
  private readonly chars: number;

  constructor(
    private readonly key: Buffer,
    private readonly kind: CursorKind = EARNING_RULES_CURSOR,
  ) {
    this.context = Buffer.from(`loyalty:${kind.resource}:cursor\0`);
    this.payloadBytes = BASE_BYTES + (kind.filtered ? FILTER_BYTES : 0);
    this.chars = Math.ceil(((this.payloadBytes + MAC_BYTES) * 8) / 6);
  }

  /** The opaque, integrity-protected form of `cursor`, bound to `filters` on a filtered list. */
  encode(cursor: Cursor, filters = ''): string {
    const payload = Buffer.alloc(this.payloadBytes);
    payload.writeUInt8(VERSION, 0);
    payload.writeUInt8(DIRECTIONS.indexOf(cursor.direction), 1);
    payload.writeBigUInt64BE(BigInt(cursor.accountId), 2);
    payload.writeBigUInt64BE(BigInt(cursor.boundary), 10);
    if (this.kind.filtered) filterDigest(filters).copy(payload, BASE_BYTES);
    return Buffer.concat([payload, this.mac(payload)]).toString('base64url');
  }

  /**
   * The cursor `token` stands for, if this server issued it to `accountId` (for `filters`, on a
   * filtered list); otherwise `400 invalid_cursor` (malformed, altered, signed with another key,
   * another account's, or issued with other filters).
   */
  decode(token: string, accountId: number, filters = ''): Cursor {
    const bytes = this.verified(token);
    const direction = DIRECTIONS[bytes.readUInt8(1)];
    const owner = bytes.readBigUInt64BE(2);
    const boundary = bytes.readBigUInt64BE(10);
    if (bytes.readUInt8(0) !== VERSION || direction === undefined || boundary > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw invalidCursor('the cursor is not one this server issued');
    }
    if (owner !== BigInt(accountId)) throw invalidCursor('the cursor was issued to another account');
    if (this.kind.filtered && !filterDigest(filters).equals(bytes.subarray(BASE_BYTES, this.payloadBytes))) {
      throw invalidCursor('the cursor was issued for other filters: send the filters of the request it came from');
    }
    return { accountId, direction, boundary: Number(boundary) };
  }

  /** The decoded bytes of a well-formed token whose MAC checks out. */
  private verified(token: string): Buffer {
    // An empty cursor is refused rather than read as "first page": `""` in metadata means "no
    // such page", and a client that followed it without checking would loop back to page 1
    // forever. Omitting `cursor` asks for the first page.
    if (token === '') {
      throw invalidCursor('the cursor is empty: "" in metadata means there is no such page; omit cursor for page 1');
    }
    // Length and alphabet first (cheap, and bounds the work done on hostile input); then the
    // round trip refuses non-canonical spellings whose spare bits differ.
    const size = this.payloadBytes + MAC_BYTES;
    const bytes = token.length === this.chars && BASE64URL.test(token) ? Buffer.from(token, 'base64url') : null;
    if (!bytes || bytes.length !== size || bytes.toString('base64url') !== token) {
      throw invalidCursor('the cursor is malformed');
    }
    const payload = bytes.subarray(0, this.payloadBytes);
    if (!timingSafeEqual(bytes.subarray(this.payloadBytes), this.mac(payload))) {
      throw invalidCursor('the cursor was altered or was not issued by this server');
    }
    return bytes;
  }

  private mac(payload: Buffer): Buffer {
    return createHmac('sha256', this.key).update(this.context).update(payload).digest();
  }
}

function filterDigest(filters: string): Buffer {
  return createHash('sha256').update(filters).digest().subarray(0, FILTER_BYTES);
}

function invalidCursor(reason: string): DomainError {
  return new DomainError(
    'invalid_cursor',
    `${reason}; use next_cursor or previous_cursor from an earlier response, unchanged`,
  );
}
