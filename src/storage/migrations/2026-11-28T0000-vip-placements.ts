import type { Kysely } from 'kysely';

// A tier change places the account's customers in batches, one short transaction each (issue 33),
// instead of one statement over every customer that held the account's writes back for seconds.
// A change bumps the account's vip_program_version (as a change of program type does) and each
// batch places the customers not yet placed for it. vip_placed_version is the version the last
// complete placement was made for: an account whose placement stopped part-way (its process died)
// has vip_placed_version < vip_program_version, and the periods job finishes it. Deleting a tier
// moves its members out in batches first: (vip_tier_id, id) finds them in id order, and serves the
// foreign key's ON DELETE SET NULL, which otherwise reads every customer of every account.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('vip_placed_version', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('customers_vip_tier').on('customers').columns(['vip_tier_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('customers_vip_tier').execute();
  await db.schema.alterTable('accounts').dropColumn('vip_placed_version').execute();
}
