import type { Kysely } from 'kysely';

// Lists that stay fast as a program grows (issue 33, docs/benchmarks.md). The API's lists are
// `id` descending within an account; a filter that matches few rows must not walk the whole
// account in id order to find them (a million customers for `updated_at_min` an hour ago), and
// one that matches most must not gather and sort them all. An equality filter gets an index that
// ends in `id`, so its page is an index range in list order; `updated_at_min` gets
// (account_id, updated_at), so the planner, knowing from the statistics how many rows the time
// matches, either reads those rows and sorts the few, or walks ids and filters. Activities get the
// account's id order their export and list read.

const INDEXES: readonly [name: string, table: string, columns: string[]][] = [
  ['customers_account_updated', 'customers', ['account_id', 'updated_at']],
  ['customers_account_state', 'customers', ['account_id', 'state', 'id']],
  ['points_transactions_account_updated', 'points_transactions', ['account_id', 'updated_at']],
  ['reward_fulfillments_account_updated', 'reward_fulfillments', ['account_id', 'updated_at']],
  ['reward_fulfillments_account_status', 'reward_fulfillments', ['account_id', 'fulfillment_status', 'id']],
  ['reward_fulfillments_account_usage', 'reward_fulfillments', ['account_id', 'usage_status', 'id']],
  // usage_status=expired: the codes past their expires_at (most codes never expire).
  ['reward_fulfillments_account_expires', 'reward_fulfillments', ['account_id', 'expires_at']],
  ['activities_account', 'activities', ['account_id', 'id']],
  ['activities_account_updated', 'activities', ['account_id', 'updated_at']],
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, table, columns] of INDEXES) {
    await db.schema.createIndex(name).on(table).columns(columns).execute();
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [name] of INDEXES) await db.schema.dropIndex(name).execute();
}
