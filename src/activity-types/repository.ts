import type { Kysely } from 'kysely';
import { compiledQuery } from '../storage/compiled-query.js';
import type { ActivityTypeRow, Database } from '../storage/schema.js';
import type { ActivityType } from './schemas.js';

export async function insertActivityType(
  db: Kysely<Database>,
  accountId: number,
  name: string,
  token: string,
  now: number,
): Promise<ActivityType> {
  const row = await db
    .insertInto('activity_types')
    .values({ account_id: accountId, name, token, created_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toActivityType(row);
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
