import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { invalidParameter, notFound } from '../errors.js';
import type { Database } from '../storage/schema.js';
import type { Work } from '../storage/unit-of-work.js';
import { findAccount, insertAccount, listAccounts } from './repository.js';

export interface Account {
  id: number;
  name: string;
}

/** An account's name, trimmed; `400` unless it is 1 to 255 characters. */
export function accountName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 255) throw invalidParameter('name', 'must be 1 to 255 characters');
  return trimmed;
}

/** Merchant accounts: every other resource belongs to one. */
export class AccountsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Creates an account (inside the caller's transaction, when `w` is given). */
  async create(name: string, w?: Work): Promise<Account> {
    const row = await insertAccount(w?.trx ?? this.db, accountName(name), w?.now ?? this.clock.now());
    return { id: row.id, name: row.name };
  }

  async list(): Promise<Account[]> {
    return (await listAccounts(this.db)).map((row) => ({ id: row.id, name: row.name }));
  }

  /** The account, or `404 not_found` naming it. */
  async require(id: number): Promise<Account> {
    const row = await findAccount(this.db, id);
    if (!row) throw notFound(`account ${id} does not exist`);
    return { id: row.id, name: row.name };
  }
}
