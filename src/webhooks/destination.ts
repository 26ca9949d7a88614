import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The longest webhook URL. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** What each refused class of address is called in a refusal. */
const CLASS_NAMES: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address (RFC 1918)',
  uniqueLocal: 'a private address (IPv6 unique-local)',
  linkLocal: 'a link-local address',
  carrierGradeNat: 'a carrier-grade NAT address (100.64.0.0/10)',
  unspecified: 'the unspecified address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address',
};

/**
 * Why a webhook may not connect to `address` (an IP address), or null when it may. Only public
 * unicast addresses are allowed: loopback, private, unique-local, link-local (169.254.0.0/16, the
 * cloud metadata address, included), CGNAT, unspecified, multicast, broadcast and every other
 * special-purpose range are refused, an IPv4 address written as IPv6 (`::ffff:127.0.0.1`) as the
 * IPv4 address it is. `allowPrivate` (WEBHOOK_ALLOW_PRIVATE_NETWORKS) allows them all.
 */
export function addressProblem(address: string, allowPrivate: boolean): string | null {
  if (allowPrivate) return null;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return `"${address}" is not an IP address`;
  }
  const range = parsed.range();
  if (range === 'unicast') return null;
  return `${address} is ${CLASS_NAMES[range] ?? `a special-purpose address (${range})`}, which webhooks may not reach`;
}

/**
 * Why `raw` may not be a webhook endpoint's URL, or null: an absolute `https://` URL (`http://`
 * too with `allowPrivate`) of at most 2,048 characters, without credentials, whose host is not an
 * address `addressProblem` refuses nor a name only this machine resolves (`localhost`). A name is
 * checked again at every delivery, on the address actually connected to: what a name resolves to
 * can change after it was saved.
 */
export function urlProblem(raw: string, allowPrivate: boolean): string | null {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL (https://…)';
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return allowPrivate ? 'must start with https:// or http://' : 'must start with https://';
  }
  if (url.username !== '' || url.password !== '') return 'must not contain credentials (user:password@)';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === '') return 'must name a host';
  if (isIP(host) !== 0 || /^[0-9.]+$/.test(host) || /^0x/i.test(host)) {
    // WHATWG URL parsing already turned 2130706433, 0x7f.1 and the like into dotted quads.
    return addressProblem(host, allowPrivate);
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if (!allowPrivate && (name === 'localhost' || name.endsWith('.localhost'))) {
    return `${host} is a loopback name, which webhooks may not reach`;
  }
  return null;
}
