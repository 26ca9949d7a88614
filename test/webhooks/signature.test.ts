import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret } from '../../src/webhooks/secrets.js';
import { signatureHeader, signWebhook, webhookHeaders } from '../../src/webhooks/signature.js';

// The signature of the Standard Webhooks scheme, checked against the reference package from the
// npm registry (its own pure-JS HMAC-SHA256): what it computes and what it accepts.

describe('webhook signatures', () => {
  const id = 'evt_0123456789abcdefghijKLMN';
  const body = '{"id":"evt_0123456789abcdefghijKLMN","type":"ping","data":{"name":"Zoë 🎉"}}';

  it('is the signature the standardwebhooks package computes', () => {
    const secret = newWebhookSecret();
    const timestamp = 1_790_000_000;
    expect(signWebhook(secret, id, timestamp, body)).toBe(
      new Webhook(secret).sign(id, new Date(timestamp * 1000), body),
    );
  });

  it('is accepted by the package, and rejected for a changed body, id, timestamp or secret', () => {
    const secret = newWebhookSecret();
    const now = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders([secret], id, now, body);
    const receiver = new Webhook(secret);
    expect(receiver.verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => receiver.verify(body.replace('Zoë', 'Zoe'), headers)).toThrow(/signature/i);
    expect(() => receiver.verify(body, { ...headers, 'webhook-id': `${id}x` })).toThrow(/signature/i);
    expect(() => receiver.verify(body, { ...headers, 'webhook-timestamp': String(now - 1) })).toThrow(/signature/i);
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow(/signature/i);
  });

  it('carries one entry per secret during a rotation, each verifying with its own secret', () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const now = Math.floor(Date.now() / 1000);
    const header = signatureHeader([current, previous], id, now, body);
    const entries = header.split(' ');
    expect(entries).toHaveLength(2);
    expect(entries.every((entry) => /^v1,[A-Za-z0-9+/]{43}=$/.test(entry))).toBe(true);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(now), 'webhook-signature': header };
    expect(() => new Webhook(current).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(body, { ...headers, 'webhook-signature': entries[0]! })).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow(/signature/i);
  });
});
