import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

// scrypt (RFC 7914) from node:crypto: memory-hard, so a leaked table is slow to guess through.
// N = 2^15, r = 8 takes 32 MiB and tens of milliseconds per hash; it runs on libuv's thread
// pool, so a sign-in never blocks the event loop.
const PRODUCTION_COST = { log2N: 15, r: 8, p: 1 };
// Verification reads the cost from the stored hash, within these bounds.
const MIN_LOG2_N = 10;
const MAX_LOG2_N = 20;
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;

/** Passwords longer than this are refused outright (nobody types them; hashing them is waste). */
export const MAX_PASSWORD_LENGTH = 1024;

function derive(password: string, salt: Buffer, log2N: number, r: number, p: number, length: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** log2N, r, p, maxmem: 256 * 2 ** log2N * r };
  return new Promise((resolve, reject) => {
    // NFC: the same password typed on different systems gives the same bytes.
    scrypt(password.normalize('NFC'), salt, length, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

let cost = PRODUCTION_COST;
/** The hash burnPasswordCheck verifies against, made at the current cost on first use. */
let decoy: Promise<string> | undefined;

/**
 * Test suites only: new hashes use N = 2^log2N (the least verifyPassword accepts is 2^10), so
 * that thousands of test sign-ins do not each spend the production cost; `null` restores it.
 */
export function setHashCostForTests(log2N: number | null): void {
  if (log2N !== null && !(Number.isInteger(log2N) && log2N >= MIN_LOG2_N && log2N <= MAX_LOG2_N)) {
    throw new RangeError(`log2N must be a whole number from ${MIN_LOG2_N} to ${MAX_LOG2_N}, got ${log2N}`);
  }
  cost = log2N === null ? PRODUCTION_COST : { ...PRODUCTION_COST, log2N };
  decoy = undefined;
}

/** Hashes a password with a fresh random salt: `scrypt$log2N$r$p$salt$key` (base64). */
export async function hashPassword(password: string): Promise<string> {
  const { log2N, r, p } = cost;
  const salt = randomBytes(SALT_LENGTH);
  const key = await derive(password, salt, log2N, r, p, KEY_LENGTH);
  return ['scrypt', log2N, r, p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** True when `password` matches the stored hash; a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [log2N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  // Bounds keep a corrupted row from asking for gigabytes of memory.
  if (
    ![log2N, r, p].every(Number.isInteger) ||
    log2N < MIN_LOG2_N ||
    log2N > MAX_LOG2_N ||
    r < 1 ||
    r > 32 ||
    p < 1 ||
    p > 4
  ) {
    return false;
  }
  const salt = Buffer.from(parts[4] ?? '', 'base64');
  const expected = Buffer.from(parts[5] ?? '', 'base64');
  if (salt.length < 8 || expected.length < 16 || expected.length > 64) return false;
  const actual = await derive(password, salt, log2N, r, p, expected.length);
  return timingSafeEqual(actual, expected);
}

/**
 * Spends the time of one verification without a user to verify, so a sign-in with an unknown
 * email takes as long as one with a wrong password.
 */
export async function burnPasswordCheck(password: string): Promise<void> {
  decoy ??= hashPassword(randomBytes(16).toString('base64'));
  await verifyPassword(password, await decoy);
}
