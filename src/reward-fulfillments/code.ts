import { randomFillSync } from 'node:crypto';

/**
 * The alphabet of reward codes: capital letters and digits without the look-alikes 0, O, 1 and I,
 * so a code read aloud or typed from a screen comes out right. 32 symbols: 5 bits each.
 */
export const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
/** 16 symbols: 80 random bits, beyond guessing at any rate a checkout would allow. */
export const CODE_LENGTH = 16;

/**
 * Bytes from the OS CSPRNG, drawn 4 KiB at a time (256 codes) and each used once, as Node's own
 * randomUUID keeps a cache: a call into the CSPRNG per code cost a purchase on PostgreSQL about
 * 4 % of its server CPU (profiled with `npm run bench:profile -- purchases postgres`).
 */
const pool = Buffer.alloc(4096);
let drawn = pool.length;

/** A new reward code from the OS CSPRNG (each byte's low 5 bits: uniform over the 32 symbols). */
export function newRewardCode(): string {
  if (drawn + CODE_LENGTH > pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  let code = '';
  for (let i = drawn; i < drawn + CODE_LENGTH; i++) code += CODE_ALPHABET[pool[i]! & 31];
  drawn += CODE_LENGTH;
  return code;
}
