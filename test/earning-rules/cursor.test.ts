import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors.js';
import { type Cursor, CursorCodec } from '../../src/pagination/cursor.js';

const codec = new CursorCodec(randomBytes(32));

function invalid(decode: () => unknown): string {
  try {
    decode();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('invalid_cursor');
    return (error as DomainError).message;
  }
  throw new Error('expected invalid_cursor');
}

const cursorArb: fc.Arbitrary<Cursor> = fc.record({
  accountId: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  direction: fc.constantFrom('next' as const, 'previous' as const),
  boundary: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
});

describe('CursorCodec', () => {
  it('round-trips every cursor, as URL-safe text of one fixed length', () => {
    fc.assert(
      fc.property(cursorArb, (cursor) => {
        const token = codec.encode(cursor);
        expect(token).toMatch(/^[A-Za-z0-9_-]{67}$/);
        expect(codec.decode(token, cursor.accountId)).toEqual(cursor);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses any single changed character', () => {
    fc.assert(
      fc.property(cursorArb, fc.nat(66), fc.nat(62), (cursor, at, shift) => {
        const token = codec.encode(cursor);
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
        const changed = alphabet[(alphabet.indexOf(token[at]!) + 1 + shift) % 64]!;
        const altered = token.slice(0, at) + changed + token.slice(at + 1);
        invalid(() => codec.decode(altered, cursor.accountId));
      }),
      { numRuns: 200 },
    );
  });

  it('refuses another account, another key, and text that is not a cursor', () => {
    const token = codec.encode({ accountId: 7, direction: 'next', boundary: 42 });
    expect(invalid(() => codec.decode(token, 8))).toMatch(/another account/);
    invalid(() => new CursorCodec(randomBytes(32)).decode(token, 7));
    expect(invalid(() => codec.decode('', 7))).toMatch(/empty/);
    for (const garbage of ['a', token.slice(0, 66), `${token}A`, `${token.slice(0, 66)}+`, ' '.repeat(67), '\u0000']) {
      invalid(() => codec.decode(garbage, 7));
    }
  });

  it('refuses a payload whose version or direction byte was changed', () => {
    const bytes = Buffer.from(codec.encode({ accountId: 7, direction: 'previous', boundary: 42 }), 'base64url');
    for (const [offset, value] of [
      [0, 2],
      [1, 2],
    ] as const) {
      const altered = Buffer.from(bytes);
      altered[offset] = value;
      invalid(() => codec.decode(altered.toString('base64url'), 7));
    }
  });
});
