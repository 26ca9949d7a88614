import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailboxKey } from '../../src/referrals/email.js';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { member, refer, runningProgram, writtenState } from './program.js';

// The mailbox rule behind self_referral and already_referred (../shared/referrals-contract.md,
// docs/decisions.md): emails are "compared after trimming, lower-casing, dropping a +tag from the
// local part, and dropping dots in the local part for gmail.com and googlemail.com", which are one
// domain (issue 49). Spellings of one mailbox compare equal; anything else that differs stays
// different.

/** Whether two emails name one mailbox: the comparison both checks make. */
const sameMailbox = (one: string, other: string) => mailboxKey(one) === mailboxKey(other);

const LOWER = [...'abcdefghijklmnopqrstuvwxyz'];
const ALNUM = [...LOWER, ...'0123456789'];
const GMAIL = ['gmail.com', 'googlemail.com'];

/** A local part without dots or tags: what the mailbox is, before spelling it. */
const local = fc.string({ unit: fc.constantFrom(...ALNUM), minLength: 1, maxLength: 16 });
const label = fc.string({ unit: fc.constantFrom(...LOWER), minLength: 1, maxLength: 10 });
/** A domain that is not gmail's: its local parts keep their dots. */
const otherDomain = fc
  .tuple(label, fc.constantFrom('com', 'org', 'io', 'co.uk', 'example'))
  .map(([name, tld]) => `${name}.${tld}`)
  .filter((domain) => !GMAIL.includes(domain));
const gmailDomain = fc.constantFrom(...GMAIL);
const anyDomain = fc.oneof(otherDomain, gmailDomain);
/** The domain a mailbox key names: googlemail.com is gmail.com. */
const keyDomain = (domain: string) => (GMAIL.includes(domain) ? 'gmail.com' : domain);
/** A domain of the same mailbox provider: either Google domain for a Google one, else itself. */
const sameProvider = (domain: string) => (GMAIL.includes(domain) ? gmailDomain : fc.constant(domain));
/** Whatever follows a `+`: any characters, other plus signs and dots included. */
const tag = fc.string({ unit: fc.constantFrom(...ALNUM, '.', '-', '_', '+'), maxLength: 12 });
const space = fc.string({ unit: fc.constantFrom(' ', '\t', '\n', '\r'), maxLength: 4 });

/** `text` with dots inserted at `positions` (each 0..text.length; repeated positions give runs of dots). */
function insertDots(text: string, positions: readonly number[]): string {
  let out = text;
  for (const at of [...positions].sort((x, y) => y - x)) out = `${out.slice(0, at)}.${out.slice(at)}`;
  return out;
}
const dotted = (text: string, minLength = 1) =>
  fc.array(fc.nat({ max: text.length }), { minLength, maxLength: 6 }).map((at) => insertDots(text, at));
/** `text` with each letter's case chosen at random. */
const anyCase = (text: string) => fc.mixedCase(fc.constant(text));

describe('mailboxKey: properties', () => {
  it('keys a mailbox to itself: trimmed, lower-cased, no tag; idempotent; sameMailbox symmetric', () => {
    fc.assert(
      fc.property(local, anyDomain, tag, space, (name, domain, plus, pad) => {
        const email = `${pad}${name.toUpperCase()}+${plus}@${domain.toUpperCase()}${pad}`;
        const key = mailboxKey(email);
        expect(key).toBe(`${name}@${keyDomain(domain)}`);
        expect(mailboxKey(key)).toBe(key);
        expect(sameMailbox(email, key)).toBe(true);
        expect(sameMailbox(key, email)).toBe(true);
      }),
    );
  });

  it('keeps the mailbox under any case', () => {
    fc.assert(
      fc.property(
        fc
          .tuple(local, anyDomain)
          .chain(([name, domain]) => fc.tuple(fc.constant(`${name}@${domain}`), anyCase(`${name}@${domain}`))),
        ([email, spelled]) => {
          expect(sameMailbox(email, spelled)).toBe(true);
        },
      ),
    );
  });

  it('keeps the mailbox with surrounding whitespace', () => {
    fc.assert(
      fc.property(local, anyDomain, space, space, (name, domain, before, after) => {
        expect(sameMailbox(`${name}@${domain}`, `${before}${name}@${domain}${after}`)).toBe(true);
      }),
    );
  });

  it('keeps the mailbox with any +tag, on either side', () => {
    fc.assert(
      fc.property(local, anyDomain, tag, tag, (name, domain, one, other) => {
        expect(sameMailbox(`${name}@${domain}`, `${name}+${one}@${domain}`)).toBe(true);
        expect(sameMailbox(`${name}+${one}@${domain}`, `${name}+${other}@${domain}`)).toBe(true);
      }),
    );
  });

  it('keeps the mailbox with dots anywhere in a gmail.com or googlemail.com local part', () => {
    fc.assert(
      fc.property(
        fc
          .tuple(local, gmailDomain)
          .chain(([name, domain]) => fc.tuple(fc.constant(name), fc.constant(domain), dotted(name), dotted(name))),
        ([name, domain, one, other]) => {
          expect(sameMailbox(`${name}@${domain}`, `${one}@${domain}`)).toBe(true);
          expect(sameMailbox(`${one}@${domain}`, `${other}@${domain}`)).toBe(true);
        },
      ),
    );
  });

  it('takes gmail.com and googlemail.com for one domain, dots and tags on either side', () => {
    fc.assert(
      fc.property(
        local.chain((name) => fc.tuple(fc.constant(name), dotted(name, 0), dotted(name, 0), tag)),
        ([name, one, other, plus]) => {
          expect(mailboxKey(`${one}@googlemail.com`)).toBe(`${name}@gmail.com`);
          expect(sameMailbox(`${one}@gmail.com`, `${other}+${plus}@googlemail.com`)).toBe(true);
          expect(sameMailbox(`${one}+${plus}@googlemail.com`, `${other}@gmail.com`)).toBe(true);
        },
      ),
    );
  });

  it('keeps the mailbox under every spelling at once', () => {
    fc.assert(
      fc.property(
        fc
          .tuple(local, anyDomain, tag, space, space)
          .chain(([name, domain, plus, before, after]) =>
            fc
              .tuple(GMAIL.includes(domain) ? dotted(name) : fc.constant(name), sameProvider(domain))
              .chain(([spelledName, spelledDomain]) =>
                anyCase(`${before}${spelledName}+${plus}@${spelledDomain}${after}`).map((spelled) => [
                  `${name}@${domain}`,
                  spelled,
                ]),
              ),
          ),
        ([email, spelled]) => {
          expect(sameMailbox(email!, spelled!)).toBe(true);
        },
      ),
    );
  });

  it('tells apart a local part with dots at any other domain', () => {
    fc.assert(
      fc.property(
        fc.tuple(local, otherDomain).chain(([name, domain]) =>
          fc.tuple(
            fc.constant(`${name}@${domain}`),
            dotted(name).map((d) => `${d}@${domain}`),
          ),
        ),
        ([email, withDots]) => {
          expect(sameMailbox(email, withDots)).toBe(false);
        },
      ),
    );
  });

  it('tells apart the same local part at different domains (but gmail.com and googlemail.com)', () => {
    fc.assert(
      fc.property(local, anyDomain, anyDomain, tag, (name, one, other, plus) => {
        fc.pre(keyDomain(one) !== keyDomain(other));
        expect(sameMailbox(`${name}@${one}`, `${name}+${plus}@${other}`)).toBe(false);
      }),
    );
  });

  it('tells apart different local parts, whatever the domain, tags and case', () => {
    fc.assert(
      fc.property(local, local, anyDomain, tag, tag, (one, other, domain, plus, otherPlus) => {
        fc.pre(one !== other);
        expect(sameMailbox(`${one}+${plus}@${domain}`, `${other.toUpperCase()}+${otherPlus}@${domain}`)).toBe(false);
      }),
    );
  });
});

describe('POST /v1/referrals: spellings of one mailbox, for self_referral and already_referred', () => {
  let t: TestApp;
  let a: Tenant;
  beforeAll(async () => {
    t = await createTestApp();
    a = await createTenant(t.services);
    await runningProgram(t, a.accountId);
  });
  afterAll(async () => t?.close());

  // Spellings the API's email format accepts: single dots between characters, tags of letters.
  const apiTag = fc.string({ unit: fc.constantFrom(...ALNUM, '-', '_'), maxLength: 8 });
  const betweenDots = (text: string) =>
    fc
      .subarray(
        Array.from({ length: text.length - 1 }, (_, i) => i + 1),
        { minLength: 0 },
      )
      .map((at) => insertDots(text, at));
  /** The mailbox of `name` (its local part, without dots at gmail) at `domain`, spelled as the API accepts it. */
  const spelling = ({ name, domain }: { name: string; domain: string }) =>
    fc
      .tuple(
        GMAIL.includes(domain) ? betweenDots(name) : fc.constant(name),
        sameProvider(domain),
        apiTag,
        fc.boolean(),
        space,
        space,
      )
      .chain(([spelledName, spelledDomain, plus, tagged, before, after]) =>
        anyCase(`${spelledName}${tagged ? `+${plus}` : ''}@${spelledDomain}`).map(
          (spelled) => `${before}${spelled}${after}`,
        ),
      );

  /** Asserts that POSTing each generated referral is refused for `reason`, writing nothing. */
  const refusesAll = (referrals: fc.Arbitrary<Record<string, unknown>>, reason: string) =>
    fc.assert(
      fc.asyncProperty(referrals, async (referral) => {
        const before = await writtenState(t);
        const error = expectError(await refer(t, a, referral), 'referral_not_allowed');
        expect(error.details[0].reason, JSON.stringify(referral)).toBe(reason);
        expect(await writtenState(t)).toEqual(before);
      }),
      { numRuns: 25 },
    );

  it('refuses every spelling of a gmail sender’s mailbox, and of another sender’s, writing nothing', async () => {
    // The mailbox of each sender: its local part (without dots at gmail) and its domain.
    const mailboxes = [
      { email: 'jane.doe@gmail.com', name: 'janedoe', domain: 'gmail.com' },
      { email: 'john.smith@googlemail.com', name: 'johnsmith', domain: 'googlemail.com' },
      { email: 'sam.smith@shop.example', name: 'sam.smith', domain: 'shop.example' },
    ];
    const senders = await Promise.all(mailboxes.map((m) => member(t, a.accountId, m.email)));
    await refusesAll(
      fc
        .nat({ max: mailboxes.length - 1 })
        .chain((i) =>
          spelling(mailboxes[i]!).map((email) => ({ referral_code: senders[i]!.code, receiver_customer_email: email })),
        ),
      'self_referral',
    );
  });

  it('refuses every spelling of a referred mailbox, by its sender or another, writing nothing (issue 49)', async () => {
    const [sender, other] = await Promise.all(
      ['ann@shop.example', 'bo@shop.example'].map((email) => member(t, a.accountId, email)),
    );
    const mailboxes = [
      { email: 'victim@gmail.com', name: 'victim', domain: 'gmail.com' },
      { email: 'Vic.Tor+shop@googlemail.com', name: 'victor', domain: 'googlemail.com' },
      { email: 'pat.lee@shop.example', name: 'pat.lee', domain: 'shop.example' },
    ];
    for (const { email } of mailboxes) {
      const made = await refer(t, a, { referral_code: sender!.code, receiver_customer_email: email });
      expect(made.statusCode, made.body).toBe(201);
    }
    await refusesAll(
      fc
        .tuple(fc.constantFrom(...mailboxes), fc.constantFrom(sender!, other!))
        .chain(([mailbox, by]) =>
          spelling(mailbox).map((email) => ({ sender_customer_id: by.id, receiver_customer_email: email })),
        ),
      'already_referred',
    );
  });
});
