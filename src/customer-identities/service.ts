import type { AccountsService } from '../accounts/service.js';
import { CustomerNotVisible, type CustomersService } from '../customers/service.js';
import { trimEmail } from '../email.js';
import { DomainError } from '../errors.js';
import { checkProperties as checkBounds } from '../properties.js';
import type { Db } from '../storage/db.js';
import type { UnitOfWork, Work } from '../storage/unit-of-work.js';
import {
  type IdentityFields,
  identityExists,
  insertIdentityIfAbsent,
  listIdentities,
  replaceIdentityProperties,
  updateIdentityFields,
} from './repository.js';
import type { CustomerIdentity, CustomerIdentityInput } from './schemas.js';

/** The outcome of create_or_update: the identity, and whether this request created it. */
export interface IdentityResult {
  identity: CustomerIdentity;
  created: boolean;
}

const checkProperties = (properties: Record<string, unknown>, when: string) =>
  checkBounds(properties, 'customer_identity.properties', when);

/**
 * How often a create_or_update transaction is replayed after losing a race to a concurrent
 * request for the same `distinct_id`. The replay finds the winner's identity and updates it, so
 * one replay suffices; the rest is headroom.
 */
const MAX_ATTEMPTS = 3;

/** Thrown inside the transaction to roll it back and replay it (see MAX_ATTEMPTS). */
class LostRace extends Error {}

/** Customer identities, each linked to the customer with its email (spec 4.2). */
export class CustomerIdentitiesService {
  constructor(
    private readonly db: Db,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
    private readonly customers: CustomersService,
  ) {}

  /**
   * Spec 4.2: updates the account's identity with this `distinct_id` (200), or creates it (201)
   * linked to the customer with its email, creating that customer when there is none. One
   * transaction: whatever fails, nothing is left half written.
   */
  async createOrUpdate(accountId: number, input: CustomerIdentityInput): Promise<IdentityResult> {
    // Callers other than the route (which trims before validation) may send surrounding spaces.
    const request = trimEmail(input);
    if (request.properties !== undefined) checkProperties(request.properties, '');
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.uow.run((w) => this.createOrUpdateIn(w, accountId, request));
      } catch (error) {
        if (!(error instanceof LostRace) && !(error instanceof CustomerNotVisible)) throw error;
        if (attempt >= MAX_ATTEMPTS) {
          throw new DomainError('unavailable', 'this customer identity is being changed concurrently; retry shortly');
        }
      }
    }
  }

  /** The account's customer identities, oldest first. */
  async listIdentities(accountId: number): Promise<CustomerIdentity[]> {
    await this.accounts.require(accountId);
    return listIdentities(this.db.kysely, accountId);
  }

  /**
   * An imported row's identity, in the caller's unit of work: created as create_or_update would
   * (linked to the customer with its email) unless the account has one with this distinct_id, which
   * is left as it is (an import run again changes nothing). Whether it created it.
   */
  async linkIfAbsent(w: Work, accountId: number, input: CustomerIdentityInput): Promise<boolean> {
    if (await identityExists(w.trx, accountId, input.distinct_id)) return false;
    return (await this.createOrUpdateIn(w, accountId, trimEmail(input))).created;
  }

  // The update is tried first because it is a write: it takes the lock that serialises this
  // distinct_id (see updateIdentityFields), and an update path must never create a customer.
  private async createOrUpdateIn(w: Work, accountId: number, request: CustomerIdentityInput): Promise<IdentityResult> {
    const { trx, now } = w;
    const updated = await updateIdentityFields(trx, accountId, request.distinct_id, changedFields(request, now));
    if (updated)
      return { identity: await mergeStoredProperties(trx, updated, request.properties, now), created: false };

    // Rules 2 and 3: the customer with the identity's email, created from the identity if none.
    const customerId = await this.customers.idForEmail(w, accountId, request);
    const created = await insertIdentityIfAbsent(trx, {
      account_id: accountId,
      customer_id: customerId,
      distinct_id: request.distinct_id,
      email: request.email,
      first_name: request.first_name ?? null,
      last_name: request.last_name ?? null,
      properties: mergeProperties({}, request.properties ?? {}),
      created_at: now,
      updated_at: now,
    });
    // A concurrent request created this distinct_id since our update found nothing (PostgreSQL;
    // on SQLite the write lock rules that out). Roll back, so a customer made for it goes too,
    // and replay: the replay takes the update path.
    if (!created) throw new LostRace();
    return { identity: created, created: true };
  }
}

/** Rule 4: present fields replace the stored ones; the linked customer is never touched (rule 5). */
function changedFields(request: CustomerIdentityInput, now: number): IdentityFields {
  const fields: IdentityFields = { email: request.email, updated_at: now };
  if (request.first_name !== undefined) fields.first_name = request.first_name;
  if (request.last_name !== undefined) fields.last_name = request.last_name;
  return fields;
}

async function mergeStoredProperties(
  trx: Work['trx'],
  identity: CustomerIdentity,
  patch: Record<string, unknown> | undefined,
  now: number,
): Promise<CustomerIdentity> {
  if (patch === undefined) return identity;
  const merged = mergeProperties(identity.properties, patch);
  // Without this, repeated updates with new keys would grow the stored object without bound.
  checkProperties(merged, ' after merging with the stored properties');
  return replaceIdentityProperties(trx, identity.id, merged, now);
}

/**
 * Merges key by key: a key sent with null is removed, other sent keys replace the stored value
 * whole (nested objects are not merged), keys not sent are kept.
 */
export function mergeProperties(
  stored: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const merged = new Map(Object.entries(stored));
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) merged.delete(key);
    else merged.set(key, value);
  }
  // fromEntries defines own properties, so a key named "__proto__" stays a plain key.
  return Object.fromEntries(merged);
}
