import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { delayAfter, MAX_DELAY_MS } from '../../src/sessions/repository.js';
import { ADDRESS_THROTTLE, PAIR_THROTTLE, throttledNetwork } from '../../src/sessions/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { authorizeUrl, hiddenFields, type OAuthFixture, REDIRECT_URI, setupOAuth } from './helpers.js';

// The sign-in throttle slows whoever fails, from where they fail, and never locks the merchant
// out: a stranger's wrong passwords from address A do not stop the owner signing in from B, on
// the OAuth sign-in page and on the console's alike (one SessionsService behind both).

let t: TestApp;
let f: OAuthFixture;
beforeEach(async () => {
  // Behind a proxy on this machine, as a deployment is: the client's address is X-Forwarded-For.
  // No load shedding: on a busy test machine a 503 would hide what is tested here.
  t = await createTestApp({ TRUST_PROXY: '127.0.0.1', MAX_EVENT_LOOP_DELAY_MS: '0' });
  f = await setupOAuth(t);
});
afterEach(async () => t.close());

const STRANGER = '198.51.100.7';
const OWNER = '203.0.113.20';

/** A browser at one client address (through the proxy): keeps its session cookie, sends forms. */
class Visitor {
  private cookie = '';
  constructor(readonly address: string) {}

  async request(method: 'GET' | 'POST', url: string, form?: Record<string, string>): Promise<LightMyRequestResponse> {
    const response = await t.app.inject({
      method,
      url,
      remoteAddress: '127.0.0.1',
      headers: {
        'x-forwarded-for': this.address,
        'x-forwarded-proto': 'https',
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { payload: new URLSearchParams(form).toString() } : {}),
    });
    const set = (response.cookies as { name: string; value: string }[]).map((c) => `${c.name}=${c.value}`);
    if (set.length > 0) this.cookie = set.join('; ');
    return response;
  }
}

type Door = (visitor: Visitor, email: string, password: string) => Promise<LightMyRequestResponse>;

/** The OAuth sign-in page (before consent). */
const oauthPage: Door = async (visitor, email, password) => {
  const url = authorizeUrl({ client_id: f.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', state: 's' });
  const page = await visitor.request('GET', url);
  expect(page.statusCode, page.body).toBe(200);
  return visitor.request('POST', '/oauth2/sign-in', { ...hiddenFields(page.body), email, password });
};

/** The console's sign-in page. */
const consolePage: Door = async (visitor, email, password) => {
  const page = await visitor.request('GET', '/admin/sign-in');
  expect(page.statusCode, page.body).toBe(200);
  return visitor.request('POST', '/admin/sign-in', { ...hiddenFields(page.body), email, password });
};

/** How many failures from one address for one email run without a wait. */
const FREE = PAIR_THROTTLE.free;

describe.each([
  ['the OAuth sign-in page', oauthPage],
  ['the console sign-in page', consolePage],
])('%s', (_name, signIn) => {
  it("a stranger's wrong passwords from one address do not stop the owner from another", async () => {
    const stranger = new Visitor(STRANGER);
    for (let i = 0; i < FREE + 5; i++) {
      const answer = await signIn(stranger, f.email, `guess ${i}`);
      expect([400, 429]).toContain(answer.statusCode);
    }
    // The stranger is now slowed...
    expect((await signIn(stranger, f.email, 'another guess')).statusCode).toBe(429);
    // ...and the owner, elsewhere, signs in at once with the right password.
    const owner = await signIn(new Visitor(OWNER), f.email, f.password);
    expect(owner.statusCode, owner.body).toBe(303);
  });

  it('slows repeated failures from one address and email with 429 and a growing Retry-After', async () => {
    const visitor = new Visitor(STRANGER);
    for (let i = 0; i < FREE; i++) {
      expect((await signIn(visitor, f.email, `guess ${i}`)).statusCode, `failure ${i + 1}`).toBe(400);
    }
    // Past the free failures each attempt waits: 1 s, then 2 s, 4 s … (slowed, not locked).
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const refused = await signIn(visitor, f.email, f.password);
      expect(refused.statusCode).toBe(429);
      expect(refused.body).toContain('Too many failed sign-ins');
      const wait = Number(refused.headers['retry-after']);
      expect(wait).toBe(delayAfter(FREE + i, PAIR_THROTTLE) / 1000);
      waits.push(wait);
      // The wait is served, then one more wrong password.
      t.clock.advance(wait * 1000);
      expect((await signIn(visitor, f.email, `late guess ${i}`)).statusCode).toBe(400);
    }
    expect(waits).toEqual([1, 2, 4, 8]);
    // The right password after the wait signs in.
    const refused = await signIn(visitor, f.email, f.password);
    expect(refused.statusCode).toBe(429);
    t.clock.advance(Number(refused.headers['retry-after']) * 1000);
    const signedIn = await signIn(visitor, f.email, f.password);
    expect(signedIn.statusCode, signedIn.body).toBe(303);
    // And the success clears the count: the next failures run free again.
    const again = new Visitor(STRANGER);
    for (let i = 0; i < FREE; i++) expect((await signIn(again, f.email, `new ${i}`)).statusCode).toBe(400);
  });

  it('refuses during the wait without checking the password, and counts none of it', async () => {
    const visitor = new Visitor(STRANGER);
    for (let i = 0; i < FREE; i++) await signIn(visitor, f.email, `guess ${i}`);
    // Hammering during the wait neither lengthens it nor gets a password checked.
    for (let i = 0; i < 20; i++) {
      const refused = await signIn(visitor, f.email, i === 19 ? f.password : `hammer ${i}`);
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
    }
    t.clock.advance(1000);
    expect((await signIn(visitor, f.email, f.password)).statusCode).toBe(303);
  });
});

/** A sign-in straight through the service both pages call (many attempts, without the pages' cost). */
async function attempt(address: string, email: string, password: string): Promise<string> {
  const { sessions } = t.services;
  const result = await sessions.signIn(await sessions.start(), email, password, address);
  return result.kind === 'throttled' ? `wait ${result.retryAfterSeconds}` : result.kind;
}

describe('the per-address count across emails', () => {
  it('slows one address guessing across many emails, and no one else', async () => {
    for (let i = 0; i < ADDRESS_THROTTLE.free; i++) {
      expect(await attempt(STRANGER, `guess-${i}@acme.example`, 'Password1'), `attempt ${i + 1}`).toBe('invalid');
    }
    expect(await attempt(STRANGER, 'one-more@acme.example', 'Password1')).toBe('wait 1');
    // Even the owner's right password from that address waits its second...
    const refused = await oauthPage(new Visitor(STRANGER), f.email, f.password);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    // ...while every other address signs in.
    expect((await oauthPage(new Visitor(OWNER), f.email, f.password)).statusCode).toBe(303);
    t.clock.advance(1000);
    expect((await oauthPage(new Visitor(STRANGER), f.email, f.password)).statusCode).toBe(303);
  });
});

describe('the memory of failures', () => {
  it('never waits past 15 minutes, and forgets an address and email after a day without attempts', async () => {
    let refusal = '';
    for (let i = 0; i < FREE + 14; i++) {
      // Each wait served in full, then one more wrong password.
      t.clock.advance(delayAfter(i, PAIR_THROTTLE));
      expect(await attempt(STRANGER, f.email, `guess ${i}`), `attempt ${i + 1}`).toBe('invalid');
      if (i < FREE - 1) continue;
      refusal = await attempt(STRANGER, f.email, f.password);
      expect(refusal).toBe(`wait ${delayAfter(i + 1, PAIR_THROTTLE) / 1000}`);
    }
    expect(refusal).toBe(`wait ${MAX_DELAY_MS / 1000}`);
    t.clock.advance(MAX_DELAY_MS + PAIR_THROTTLE.forgetAfterMs);
    for (let i = 0; i < FREE; i++) expect(await attempt(STRANGER, f.email, `fresh ${i}`)).toBe('invalid');
    expect(await attempt(STRANGER, f.email, f.password)).toBe('wait 1');
  });
});

describe('addresses', () => {
  it('counts an IPv6 address as its /64, and IPv4-mapped IPv6 as the IPv4 address', () => {
    expect(throttledNetwork('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(throttledNetwork('2001:db8:1:2::9')).toBe('2001:db8:1:2::/64');
    expect(throttledNetwork('2001:DB8::1')).toBe('2001:db8:0:0::/64');
    expect(throttledNetwork('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(throttledNetwork('::1')).toBe('0:0:0:0::/64');
    expect(throttledNetwork('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(throttledNetwork('192.0.2.1')).toBe('192.0.2.1');
  });

  it('does not start the count again for another address of the same IPv6 network', async () => {
    for (let i = 0; i < FREE; i++) {
      expect(await attempt(`2001:db8:7:7::${i + 1}`, f.email, `guess ${i}`)).toBe('invalid');
    }
    expect(await attempt('2001:db8:7:7::ff', f.email, f.password)).toBe('wait 1');
    expect(await attempt('2001:db8:7:8::1', f.email, f.password)).toBe('signed_in');
  });
});
