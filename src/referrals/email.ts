// The one mailbox rule of the referral program (docs/referrals.md, docs/decisions.md): two
// spellings of one mailbox are one sender for `self_referral` and one friend for
// `already_referred`. Customers are still matched on their trimmed, lower-cased email everywhere
// else. The migration 2026-11-29T0100-referral-mailboxes wrote the keys of the referrals made
// before it with a copy of this rule: a change here needs a migration that writes them again.

/** Google's domains: one domain, whose local parts ignore dots. */
const GOOGLE_DOMAINS = new Set(['gmail.com', 'googlemail.com']);

/**
 * The mailbox an email names, as the referral program compares them: trimmed, lower-cased,
 * without a `+tag` in the local part; gmail.com and googlemail.com are one domain (keyed
 * gmail.com) whose local parts lose their dots.
 */
export function mailboxKey(email: string): string {
  const address = email.trim().toLowerCase();
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  let domain = address.slice(at + 1);
  let local = address.slice(0, at);
  const plus = local.indexOf('+');
  if (plus >= 0) local = local.slice(0, plus);
  if (GOOGLE_DOMAINS.has(domain)) {
    local = local.replaceAll('.', '');
    domain = 'gmail.com';
  }
  return `${local}@${domain}`;
}
