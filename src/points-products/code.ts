import { randomBytes } from 'node:crypto';

/**
 * The alphabet of reward codes: capital letters and digits without the look-alikes 0, O, 1 and I,
 * so a code read aloud or typed from a screen comes out right. 32 symbols: 5 bits each.
 */
export const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
/** 16 symbols: 80 random bits, beyond guessing at any rate a checkout would allow. */
export const CODE_LENGTH = 16;

/** A new reward code from the OS CSPRNG (each byte's low 5 bits: uniform over the 32 symbols). */
export function newRewardCode(): string {
  let code = '';
  for (const byte of randomBytes(CODE_LENGTH)) code += CODE_ALPHABET[byte & 31];
  return code;
}
