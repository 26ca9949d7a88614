import type { Transaction } from 'kysely';
import type { Database } from '../storage/schema.js';

/** An enabled endpoint, as the fan-out matches events against it. */
export interface Subscriber {
  id: number;
  /** `*`, or ` type type … `. */
  eventTypes: string;
}

/** The account's enabled endpoints (at most 20 per account), in the work's transaction. */
export async function findSubscribers(trx: Transaction<Database>, accountId: number): Promise<Subscriber[]> {
  const rows = await trx
    .selectFrom('webhook_endpoints')
    .select(['id', 'event_types'])
    .where('account_id', '=', accountId)
    .where('status', '=', 'enabled')
    .execute();
  return rows.map((row) => ({ id: Number(row.id), eventTypes: row.event_types }));
}
