// Email addresses, the one place they are trimmed and normalised (customers, identities, users).

/** The key emails are matched on: trimmed and lower-cased (addresses are ASCII). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Trims the email inside an input object (its `field`, `email` unless named), before validation:
 * the contract matches emails "after trimming surrounding spaces", so " Jane@X.com " is a valid
 * address. Anything else is left for the schema to refuse.
 */
export function trimEmail<T>(input: T, field = 'email'): T {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const email = (input as Record<string, unknown>)[field];
  return typeof email === 'string' ? { ...input, [field]: email.trim() } : input;
}

/**
 * A route's preValidation: trims the email at `wrapper.field` of a request body (such as
 * `customer_identity.email`), in place, before the schema checks its format.
 */
export function trimBodyEmail(wrapper: string, field = 'email') {
  return async (request: { body: unknown }): Promise<void> => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || !(wrapper in body)) return;
    const wrapped = body as Record<string, unknown>;
    wrapped[wrapper] = trimEmail(wrapped[wrapper], field);
  };
}
