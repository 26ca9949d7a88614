import type { Kysely } from 'kysely';

// An activity type's name is unique in its account: two types both called "Place an order" could
// not be told apart in the console's lists and rule form. Names are compared exactly as stored.
// A database made before this may hold duplicates: every one but the oldest (lowest id) is renamed
// "<name> (2)", "<name> (3)"… (the first suffix no type of the account has), so nothing is lost,
// tokens (what integrators send) are untouched, and the merchant sees which ones to tidy up.

export async function up(db: Kysely<any>): Promise<void> {
  const rows: Array<{ id: number | string; account_id: number | string; name: string }> = await db
    .selectFrom('activity_types')
    .select(['id', 'account_id', 'name'])
    .orderBy('id')
    .execute();
  const taken = new Map<string, Set<string>>();
  for (const row of rows) {
    const names = taken.get(String(row.account_id)) ?? new Set<string>();
    taken.set(String(row.account_id), names);
    names.add(row.name);
  }
  const seen = new Set<string>();
  for (const row of rows) {
    const key = JSON.stringify([String(row.account_id), row.name]);
    if (!seen.has(key)) {
      seen.add(key);
      continue;
    }
    const names = taken.get(String(row.account_id))!;
    let n = 2;
    while (names.has(`${row.name} (${n})`)) n++;
    const name = `${row.name} (${n})`;
    names.add(name);
    seen.add(JSON.stringify([String(row.account_id), name]));
    await db.updateTable('activity_types').set({ name }).where('id', '=', row.id).execute();
  }
  await db.schema
    .createIndex('activity_types_account_name')
    .on('activity_types')
    .columns(['account_id', 'name'])
    .unique()
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('activity_types_account_name').execute();
}
