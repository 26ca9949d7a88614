// The comparison behind `self_referral` (docs/referrals.md): two spellings of one mailbox are the
// same sender. Customers are still matched on their trimmed, lower-cased email everywhere else.

const DOTLESS_DOMAINS = new Set(['gmail.com', 'googlemail.com']);

/**
 * The mailbox an email names, for comparing a referral's receiver with its sender: trimmed,
 * lower-cased, without a `+tag` in the local part, and without dots in the local part at
 * gmail.com and googlemail.com (which ignore them).
 */
export function mailboxKey(email: string): string {
  const address = email.trim().toLowerCase();
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  const domain = address.slice(at + 1);
  let local = address.slice(0, at);
  const plus = local.indexOf('+');
  if (plus >= 0) local = local.slice(0, plus);
  if (DOTLESS_DOMAINS.has(domain)) local = local.replaceAll('.', '');
  return `${local}@${domain}`;
}

/** Whether two emails name the same mailbox (see mailboxKey). */
export function sameMailbox(a: string, b: string): boolean {
  return mailboxKey(a) === mailboxKey(b);
}
