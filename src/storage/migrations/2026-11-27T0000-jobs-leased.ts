import { type Kysely, sql } from 'kysely';

// The jobs in flight (claimed, lease running), by group: what a claim reads to pass over the
// groups that already have their most in flight (src/jobs/repository.ts, findClaimable). Partial,
// so that it holds only the claimed rows, however many jobs wait.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('jobs_leased')
    .on('jobs')
    .columns(['group_key', 'run_at'])
    .where(sql.ref('lease_owner'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('jobs_leased').execute();
}
