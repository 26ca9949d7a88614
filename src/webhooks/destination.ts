import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The longest webhook URL. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Ports a webhook may not be sent to, whatever the address (WEBHOOK_ALLOW_PRIVATE_NETWORKS lifts
 * none): 0, which is no port; the WHATWG Fetch standard's "bad ports", which browsers refuse for
 * the same reason (well-known ports of protocols other than HTTP: SSH's 22, SMTP's 25, …;
 * https://fetch.spec.whatwg.org/#port-blocking); and the two data stores whose text protocols a
 * POST's lines can drive, Redis's 6379 and memcached's 11211.
 */
export const REFUSED_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080, 6379, 11211,
]);

/** What a refusal the setting lifts says about it. */
const ALLOWED_BY_SETTING = '(WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows it, for tests and private deployments only)';

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
 * IPv4 address it is, and the deprecated IPv4-compatible form (`::127.0.0.1`, ::/96: RFC 4291
 * 2.5.5.1), which some stacks still connect to as that IPv4 address, whatever it embeds.
 * `allowPrivate` (WEBHOOK_ALLOW_PRIVATE_NETWORKS) allows them all.
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
  const embedded = ipv4Compatible(parsed);
  if (embedded !== null) {
    const within = embedded.range();
    const of = within === 'unicast' ? '' : `, of ${embedded.toString()}, ${className(within)}`;
    return `${address} is an IPv4-compatible IPv6 address (deprecated)${of}, which webhooks may not reach`;
  }
  if (range === 'unicast') return null;
  return `${address} is ${className(range)}, which webhooks may not reach`;
}

function className(range: string): string {
  return CLASS_NAMES[range] ?? `a special-purpose address (${range})`;
}

/** The IPv4 address a deprecated IPv4-compatible IPv6 address (::a.b.c.d, not :: nor ::1) embeds; else null. */
function ipv4Compatible(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | null {
  if (address.kind() !== 'ipv6') return null;
  const bytes = address.toByteArray();
  if (bytes.slice(0, 12).some((byte) => byte !== 0) || bytes.slice(12, 15).every((byte) => byte === 0)) return null;
  return ipaddr.fromByteArray(bytes.slice(12)) as ipaddr.IPv4;
}

/**
 * Why `raw` may not be a webhook endpoint's URL, or null: an absolute `https://` URL (`http://`
 * too with `allowPrivate`) of at most 2,048 characters, without credentials, on no port of
 * REFUSED_PORTS, whose host is not an address `addressProblem` refuses nor a name only this
 * machine resolves (`localhost`). A name is checked again at every delivery, on the address
 * actually connected to: what a name resolves to can change after it was saved. A refusal the
 * setting would lift says so.
 */
export function urlProblem(raw: string, allowPrivate: boolean): string | null {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL (https://…)';
  }
  if (allowPrivate ? url.protocol !== 'https:' && url.protocol !== 'http:' : url.protocol !== 'https:') {
    if (allowPrivate) return 'must start with https:// or http://';
    return url.protocol === 'http:'
      ? `must start with https:// ${ALLOWED_BY_SETTING.replace('allows it', 'allows http://')}`
      : 'must start with https://';
  }
  if (url.username !== '' || url.password !== '') return 'must not contain credentials (user:password@)';
  // The default port (443, 80) is '' here: WHATWG URL parsing drops it.
  if (url.port !== '' && REFUSED_PORTS.has(Number(url.port))) {
    return `must not use port ${url.port}: webhooks are sent to HTTP ports only, not 0 nor a well-known port of another protocol (such as SSH's 22 or Redis's 6379)`;
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === '') return 'must name a host';
  if (isIP(host) !== 0 || /^[0-9.]+$/.test(host) || /^0x/i.test(host)) {
    // WHATWG URL parsing already turned 2130706433, 0x7f.1 and the like into dotted quads.
    const problem = addressProblem(host, allowPrivate);
    return problem === null ? null : `${problem} ${ALLOWED_BY_SETTING}`;
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if (!allowPrivate && (name === 'localhost' || name.endsWith('.localhost'))) {
    return `${host} is a loopback name, which webhooks may not reach ${ALLOWED_BY_SETTING}`;
  }
  return null;
}
