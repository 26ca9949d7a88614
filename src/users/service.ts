import type { Kysely, Transaction } from 'kysely';
import { type Static, Type } from 'typebox';
import type { AccountsService } from '../accounts/service.js';
import { normalizeEmail, trimEmail } from '../email.js';
import { invalidParameter, notFound } from '../errors.js';
import type { Database, UserRow } from '../storage/schema.js';
import type { UnitOfWork } from '../storage/unit-of-work.js';
import { validate } from '../validate.js';
import { burnPasswordCheck, hashPassword, MAX_PASSWORD_LENGTH, verifyPassword } from './password.js';
import {
  findUserByEmail,
  findUserById,
  findUsersOfAccount,
  insertUserIfAbsent,
  updatePasswordHash,
} from './repository.js';

/** The shortest password a merchant user may have. */
export const MIN_PASSWORD_LENGTH = 10;

/** A merchant user: signs in to the OAuth pages to approve apps for its one account. */
export interface User {
  id: number;
  account_id: number;
  email: string;
}

/** What `loyalty users create` accepts. */
export const UserInput = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254 }),
    password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH }),
  },
  { additionalProperties: false },
);
export type UserInput = Static<typeof UserInput>;

/** Merchant users and their passwords (scrypt, never stored or shown in clear). */
export class UsersService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
  ) {}

  /** Creates a user of the account; the email must not belong to any other user. */
  async create(accountId: number, input: { email: string; password: string }): Promise<User> {
    const user = checkedInput(input);
    await this.accounts.require(accountId);
    const passwordHash = await hashPassword(user.password);
    return this.uow.run((w) => this.insert(w.trx, accountId, user, passwordHash, w.now));
  }

  /**
   * Creates an account named `accountName` and its first user, in one transaction: a refused
   * user (an email already taken) leaves no account behind.
   */
  async createWithAccount(accountName: string, input: { email: string; password: string }): Promise<User> {
    const user = checkedInput(input);
    const passwordHash = await hashPassword(user.password);
    return this.uow.run(async (w) => {
      const account = await this.accounts.create(accountName, w);
      return this.insert(w.trx, account.id, user, passwordHash, w.now);
    });
  }

  /** Inserts the user in the caller's transaction. */
  private async insert(
    db: Transaction<Database>,
    accountId: number,
    user: UserInput,
    passwordHash: string,
    now: number,
  ): Promise<User> {
    const row = await insertUserIfAbsent(db, {
      account_id: accountId,
      email: user.email,
      email_normalized: normalizeEmail(user.email),
      password_hash: passwordHash,
      created_at: now,
    });
    if (!row) throw invalidParameter('email', 'is already used by another user');
    return toUser(row);
  }

  /**
   * The user with this email and password, or null. Unknown emails cost the same scrypt work as
   * wrong passwords, so the answer time does not tell whether an email has an account.
   */
  async authenticate(email: string, password: string): Promise<User | null> {
    // No user can have such a password or email; answering at once reveals nothing about either.
    if ([...password].length > MAX_PASSWORD_LENGTH || email.length > 254) return null;
    const row = await findUserByEmail(this.db, normalizeEmail(email));
    if (!row) {
      await burnPasswordCheck(password);
      return null;
    }
    return (await verifyPassword(password, row.password_hash)) ? toUser(row) : null;
  }

  /** The account's users, oldest first (never their password hashes). */
  async list(accountId: number): Promise<User[]> {
    await this.accounts.require(accountId);
    return (await findUsersOfAccount(this.db, accountId)).map(toUser);
  }

  /**
   * Gives the user with this email a new password (`loyalty users reset-password`: whoever runs the
   * CLI administers the server). The caller signs the user's browsers out.
   */
  async resetPassword(email: string, password: string): Promise<User> {
    const user = checkedInput({ email, password });
    const row = await updatePasswordHash(this.db, normalizeEmail(user.email), await hashPassword(user.password));
    if (!row) throw notFound(`no user signs in with ${user.email}`);
    return toUser(row);
  }

  /** The user, or null when it no longer exists. */
  async find(id: number): Promise<User | null> {
    const row = await findUserById(this.db, id);
    return row ? toUser(row) : null;
  }
}

function toUser(row: UserRow): User {
  return { id: row.id, account_id: row.account_id, email: row.email };
}

/** The email and password checked: the password's length first, in characters, then the schema. */
function checkedInput(input: { email: string; password: string }): UserInput {
  // Characters, not UTF-16 units: "10 characters" means what a person counts.
  if (typeof input.password === 'string' && [...input.password].length < MIN_PASSWORD_LENGTH) {
    throw invalidParameter('password', `must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  return validate(UserInput, trimEmail({ email: input.email, password: input.password }), 'user');
}
