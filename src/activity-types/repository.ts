import type { Kysely } from 'kysely';
import { compiledQuery } from '../storage/compiled-query.js';
import { isUniqueViolation } from '../storage/errors.js';
import type { ActivityTypeRow, Database } from '../storage/schema.js';
import type { ActivityType } from './schemas.js';

/**
 * Inserts an activity type, or answers `name_taken` when the account already has one of that
 * name: the unique index decides, so two requests racing with one name make one type.
 */
export async function insertActivityType(
  db: Kysely<Database>,
  accountId: number,
  name: string,
  token: string,
  now: number,
): Promise<ActivityType | 'name_taken'> {
  try {
    const row = await db
      .insertInto('activity_types')
      .values({ account_id: accountId, name, token, created_at: now })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toActivityType(row);
  } catch (error) {
    if (isUniqueViolation(error) && violatesNameIndex(error)) return 'name_taken';
    throw error;
  }
}

/**
 * The name index, not the token's (a token collision, at 119 random bits, is a bug to surface):
 * PostgreSQL names the index, SQLite the columns.
 */
function violatesNameIndex(error: unknown): boolean {
  const { constraint, message } = error as { constraint?: string; message?: string };
  return constraint === 'activity_types_account_name' || /activity_types\.name\b/.test(message ?? '');
}

/** The account's activity types, oldest first. */
export async function listActivityTypes(db: Kysely<Database>, accountId: number): Promise<ActivityType[]> {
  const rows = await db
    .selectFrom('activity_types')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
  return rows.map(toActivityType);
}

/** The account's activity type with this token. */
export async function findActivityTypeByToken(
  db: Kysely<Database>,
  accountId: number,
  token: string,
): Promise<ActivityType | undefined> {
  const [row] = await typeByTokenQuery(db, { accountId, token });
  return row && toActivityType(row);
}

const typeByTokenQuery = compiledQuery((db, v: { accountId: number; token: string }) =>
  db.selectFrom('activity_types').selectAll().where('account_id', '=', v.accountId).where('token', '=', v.token),
);

function toActivityType(row: ActivityTypeRow): ActivityType {
  return { id: row.id, name: row.name, token: row.token };
}
