import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { seal, unseal } from '../auth/secrets.js';
import type { Clock } from '../clock.js';
import type { Database } from '../storage/schema.js';
import { ensureServerSecret } from '../storage/server-secrets.js';

/** The prefix of a webhook endpoint's signing secret (the Standard Webhooks form). */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** The `server_secrets` row the sealing key of webhook secrets is derived from. */
export const WEBHOOK_KEY_SECRET = 'webhook_secret_key';

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The raw key bytes of a `whsec_` secret: what the HMAC is keyed with (Standard Webhooks). */
export function webhookSecretKey(secret: string): Buffer {
  return Buffer.from(secret.slice(WEBHOOK_SECRET_PREFIX.length), 'base64');
}

/**
 * Seals and opens endpoints' signing secrets: they must be kept to sign, so the database holds
 * them encrypted (AES-256-GCM, key derived by HKDF from a random server secret every process
 * shares, bound to the endpoint's account), never in clear.
 */
export class WebhookSecrets {
  private key: Promise<string> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async seal(accountId: number, secret: string): Promise<string> {
    return seal(secret, await this.serverKey(), context(accountId));
  }

  /** The secret `sealed` holds; throws when it cannot be opened (another server's key, or tampering). */
  async open(accountId: number, sealed: string): Promise<string> {
    const secret = unseal(sealed, await this.serverKey(), context(accountId));
    if (secret === null) throw new Error("a webhook endpoint's secret cannot be opened with this server's key");
    return secret;
  }

  private serverKey(): Promise<string> {
    this.key ??= ensureServerSecret(
      this.db,
      WEBHOOK_KEY_SECRET,
      randomBytes(32).toString('base64'),
      this.clock.now(),
    ).catch((error: unknown) => {
      this.key = null;
      throw error;
    });
    return this.key;
  }
}

const context = (accountId: number) => `webhook_endpoint_secret:${accountId}`;
