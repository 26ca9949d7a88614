import { randomBase62 } from '../auth/secrets.js';

/** 12 base62 characters: about 71 random bits, unique across every account in practice and never guessed. */
export const REFERRAL_CODE_LENGTH = 12;
/** What a referral code looks like (the contract: 8 or more base62 characters). */
export const REFERRAL_CODE_PATTERN = '^[0-9A-Za-z]{8,64}$';

/** A new referral code, random (never derived from an id), from the OS CSPRNG. */
export function newReferralCode(): string {
  return randomBase62(REFERRAL_CODE_LENGTH);
}

/** A customer's referral URL: the server's referral base and the code; null without a code. */
export function referralUrl(base: string, code: string | null): string | null {
  return code === null ? null : `${base}/${code}`;
}
