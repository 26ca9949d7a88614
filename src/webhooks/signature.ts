import { createHmac } from 'node:crypto';
import { webhookSecretKey } from './secrets.js';

// The Standard Webhooks signature scheme (https://www.standardwebhooks.com/, "Signature scheme"):
// HMAC-SHA256 keyed with the secret's bytes over `id.timestamp.body`, sent as `v1,<base64>`.
// node:crypto signs: the reference package's pure-JS SHA-256 is for receivers, not for a sender
// that signs every delivery.

/** One `v1,<base64>` signature of `body` for the message `id` sent at `timestampSeconds`. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', webhookSecretKey(secret))
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/**
 * The `webhook-signature` header: one signature per secret, separated by a space (after a
 * rotation the new secret's and the old one's, so receivers verifying with either accept it).
 */
export function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets.map((secret) => signWebhook(secret, id, timestampSeconds, body)).join(' ');
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatureHeader(secrets, id, timestampSeconds, body),
  };
}
