import { createCipheriv, createDecipheriv, hash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Bytes of the OS CSPRNG drawn at once: one call per many codes, not one per code (as randomUUID caches). */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;

/** Random base62 text from the OS CSPRNG, without modulo bias (rejection sampling). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    if (poolAt >= pool.length) {
      pool = randomBytes(POOL_BYTES);
      poolAt = 0;
    }
    const byte = pool[poolAt++]!;
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

/** Credential prefixes of the contract. */
export const API_KEY_PREFIX = 'api_';
export const ACCESS_TOKEN_PREFIX = 'oa2_';
export const CLIENT_SECRET_PREFIX = 'cs_';

// What newSecret makes, with the contract's lower bound of 32 random characters.
const CREDENTIAL_SHAPE = /^(?:api|oa2)_[0-9A-Za-z]{32,200}$/;

/** True when `value` has the form of an API key or access token (anything else is none). */
export function isCredentialShaped(value: string): boolean {
  return CREDENTIAL_SHAPE.test(value);
}

/** A new secret: the prefix and 40 random base62 characters (about 238 bits). */
export function newSecret(prefix: string): string {
  return prefix + randomBase62(40);
}

/** SHA-256 of a secret, hex: the only form in which secrets are stored. */
export function sha256Hex(value: string): string {
  // The one-shot form: a third of createHash's time, on every authenticated request.
  return hash('sha256', value, 'hex');
}

/** Constant-time comparison of two hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The form listings show: the prefix and the first four random characters (`api_AbC4…`). */
export function redact(secret: string): string {
  const cut = secret.indexOf('_') + 5;
  return `${secret.slice(0, cut)}…`;
}

/**
 * Encrypts `plaintext` (AES-256-GCM) under a key derived (HKDF-SHA256) from `secret`, bound to
 * `context` (authenticated, not stored). Used to hold a new API key for the one page that shows
 * it, sealed to the browser session that made it: the database holds only the session id's hash,
 * so what it stores cannot be read without the session's cookie.
 */
export function seal(plaintext: string, secret: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey(secret), iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** What `seal` sealed with this secret and context, or null (another secret, context, or tampering). */
export function unseal(sealed: string, secret: string, context: string): string | null {
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length < 28) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealKey(secret), bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

function sealKey(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'loyalty:sealed-secret:v1', 32));
}
