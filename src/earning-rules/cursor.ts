import { createHmac, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../errors.js';

/** Which way a cursor pages: `next` to older rules (smaller ids), `previous` to newer ones. */
export type Direction = 'next' | 'previous';

/** Where a page starts: the rules strictly beyond `boundary` in `direction`, for one account. */
export interface Cursor {
  accountId: number;
  direction: Direction;
  boundary: number;
}

// Layout (50 bytes, 67 base64url characters): version, direction, account id, boundary id
// (unsigned 64-bit big-endian), then HMAC-SHA256 of those 18 bytes. The payload is readable by
// anyone (it holds nothing the caller does not know); the MAC makes it unforgeable.
const VERSION = 1;
const PAYLOAD_BYTES = 18;
const MAC_BYTES = 32;
const CURSOR_BYTES = PAYLOAD_BYTES + MAC_BYTES;
const CURSOR_CHARS = Math.ceil((CURSOR_BYTES * 8) / 6);
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const DIRECTIONS: readonly Direction[] = ['next', 'previous'];
// Binds the MAC to this resource, so the shared key can sign other kinds of cursor later
// without one kind being accepted as another.
const CONTEXT = Buffer.from('loyalty:earning_rules:cursor\0');

/** Encodes and checks cursors with one HMAC key (the same key in every server process). */
export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  /** The opaque, integrity-protected form of `cursor`. */
  encode(cursor: Cursor): string {
    const payload = Buffer.alloc(PAYLOAD_BYTES);
    payload.writeUInt8(VERSION, 0);
    payload.writeUInt8(DIRECTIONS.indexOf(cursor.direction), 1);
    payload.writeBigUInt64BE(BigInt(cursor.accountId), 2);
    payload.writeBigUInt64BE(BigInt(cursor.boundary), 10);
    return Buffer.concat([payload, this.mac(payload)]).toString('base64url');
  }

  /**
   * The cursor `token` stands for, if this server issued it to `accountId`; otherwise
   * `400 invalid_cursor` (malformed, altered, signed with another key, or another account's).
   */
  decode(token: string, accountId: number): Cursor {
    const bytes = this.verified(token);
    const direction = DIRECTIONS[bytes.readUInt8(1)];
    const owner = bytes.readBigUInt64BE(2);
    const boundary = bytes.readBigUInt64BE(10);
    if (bytes.readUInt8(0) !== VERSION || direction === undefined || boundary > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw invalidCursor('the cursor is not one this server issued');
    }
    if (owner !== BigInt(accountId)) throw invalidCursor('the cursor was issued to another account');
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
    const bytes = token.length === CURSOR_CHARS && BASE64URL.test(token) ? Buffer.from(token, 'base64url') : null;
    if (!bytes || bytes.length !== CURSOR_BYTES || bytes.toString('base64url') !== token) {
      throw invalidCursor('the cursor is malformed');
    }
    const payload = bytes.subarray(0, PAYLOAD_BYTES);
    if (!timingSafeEqual(bytes.subarray(PAYLOAD_BYTES), this.mac(payload))) {
      throw invalidCursor('the cursor was altered or was not issued by this server');
    }
    return bytes;
  }

  private mac(payload: Buffer): Buffer {
    return createHmac('sha256', this.key).update(CONTEXT).update(payload).digest();
  }
}

function invalidCursor(reason: string): DomainError {
  return new DomainError(
    'invalid_cursor',
    `${reason}; use next_cursor or previous_cursor from an earlier response, unchanged`,
  );
}
