// Email addresses, the one place they are trimmed and normalised (customers, identities, users).

/** The key emails are matched on: trimmed and lower-cased (addresses are ASCII). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Trims the email inside an input object, before validation: the contract matches emails "after
 * trimming surrounding spaces", so " Jane@X.com " is a valid address. Anything else is left for
 * the schema to refuse.
 */
export function trimEmail<T>(input: T): T {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const email = (input as Record<string, unknown>).email;
  return typeof email === 'string' ? { ...input, email: email.trim() } : input;
}
