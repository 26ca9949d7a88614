import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.js';

// Which delivery each attempt of the delivery log belongs to, and what followed it (issue 49):
// `delivery_id`, the id of the delivery's job (jobs are deleted when done, so no foreign key),
// from which the log reads, while the delivery is pending, when it is tried next (the job's
// run_at: nothing kept twice); `ends_delivery`, 1 when no retry followed the attempt (it
// succeeded, or the schedule ran out), a fact the job cannot tell once it is gone; `trigger`,
// `resend` for the attempts of a delivery made by a resend, `event` for the others.
//
// The attempts logged before: those of deliveries still pending are linked to their job, and a
// failed attempt followed by another of the same event at the same endpoint, or pending, did not
// end its delivery.

export async function up(db: Kysely<any>): Promise<void> {
  const ref = isPostgres(db) ? 'bigint' : 'integer';
  await db.schema.alterTable('webhook_attempts').addColumn('delivery_id', ref).execute();
  await db.schema
    .alterTable('webhook_attempts')
    .addColumn('ends_delivery', 'integer', (c) => c.notNull().defaultTo(1).check(sql`ends_delivery in (0, 1)`))
    .execute();
  await db.schema
    .alterTable('webhook_attempts')
    .addColumn('trigger', 'text', (c) => c.notNull().defaultTo('event').check(sql`"trigger" in ('event', 'resend')`))
    .execute();
  await sql`
    update webhook_attempts
    set delivery_id = (
      select max(j.id) from jobs j
      where j.queue = 'webhook_delivery' and j.subject_id = webhook_attempts.event_id
        and j.group_key = 'webhook_endpoint:' || webhook_attempts.webhook_endpoint_id
    )
    where event_id in (select subject_id from jobs where queue = 'webhook_delivery')
  `.execute(db);
  await sql`
    update webhook_attempts
    set ends_delivery = 0
    where (status_code is null or status_code < 200 or status_code >= 300)
      and (
        delivery_id is not null
        or exists (
          select 1 from webhook_attempts later
          where later.event_id = webhook_attempts.event_id
            and later.webhook_endpoint_id = webhook_attempts.webhook_endpoint_id
            and later.id > webhook_attempts.id
        )
      )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_attempts').dropColumn('trigger').execute();
  await db.schema.alterTable('webhook_attempts').dropColumn('ends_delivery').execute();
  await db.schema.alterTable('webhook_attempts').dropColumn('delivery_id').execute();
}
