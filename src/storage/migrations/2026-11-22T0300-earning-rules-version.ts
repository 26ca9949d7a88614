import type { Kysely } from 'kysely';

// A counter per account, raised in the same transaction as every change to its earning rules:
// a server process can then tell in one indexed read whether a page it served is still exact,
// whichever process or CLI made the change.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('earning_rules_version', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').dropColumn('earning_rules_version').execute();
}
