import { afterEach, describe, expect, it } from 'vitest';
import { findAttemptsPage } from '../../src/webhooks/repository.js';
import { followUp } from '../../src/webhooks/service.js';
import { type MigratingDatabase, migratedBefore } from './migrating.js';

// The delivery log's links to its deliveries (issue 49) on a database that already has a log: the
// attempts of a delivery still pending are linked to its job, so the log says when it is retried;
// a failed attempt followed by another of its event at its endpoint did not end its delivery; the
// last of a delivery whose retries ran out did, and so did every success.

const DELIVERIES = '2026-11-29T0300-webhook-attempt-deliveries';

describe(`migration ${DELIVERIES}`, () => {
  let migrating: MigratingDatabase | undefined;
  afterEach(async () => {
    await migrating?.db.close();
    await migrating?.database.drop();
  });

  it('links the attempts of pending deliveries to their job and marks those that ended a delivery', async () => {
    migrating = await migratedBefore(DELIVERIES);
    const { kysely } = migrating;
    const now = Date.UTC(2026, 0, 1);
    const { id: accountId } = await kysely
      .insertInto('accounts')
      .values({ name: 'Shop', created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    const { id: endpointId } = await kysely
      .insertInto('webhook_endpoints')
      .values({
        account_id: accountId,
        grant_id: null,
        app_id: null,
        url: 'https://receiver.example/hooks',
        description: '',
        enabled_events: '["*"]',
        event_types: '*',
        scopes: null,
        status: 'enabled',
        secret: 'sealed',
        previous_secret: null,
        previous_secret_expires_at: null,
        failing_since: null,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const event = async (publicId: string) =>
      Number(
        (
          await kysely
            .insertInto('events')
            .values({ public_id: publicId, account_id: accountId, type: 'ping', data: '{}', created_at: now })
            .returning('id')
            .executeTakeFirstOrThrow()
        ).id,
      );
    const exhausted = await event('evt_exhausted00000000000000');
    const pending = await event('evt_pending0000000000000000');
    const delivered = await event('evt_delivered00000000000000');
    const { id: jobId } = await kysely
      .insertInto('jobs')
      .values({
        queue: 'webhook_delivery',
        account_id: accountId,
        group_key: `webhook_endpoint:${endpointId}`,
        subject_id: pending,
        payload: JSON.stringify({ webhook_endpoint_id: endpointId }),
        unique_key: null,
        run_at: now + 5000,
        attempts: 1,
        lease_owner: null,
        created_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const attempt = (eventId: number, n: number, statusCode: number) =>
      kysely
        .insertInto('webhook_attempts')
        .values({
          account_id: accountId,
          webhook_endpoint_id: endpointId,
          event_id: eventId,
          attempt: n,
          status_code: statusCode,
          error: null,
          duration_ms: 3,
          response_body: '',
          created_at: now + n,
        } as never)
        .execute();
    for (const n of [1, 2, 3]) await attempt(exhausted, n, 500);
    await attempt(pending, 1, 503);
    await attempt(delivered, 1, 200);

    await migrating.migrateRest();

    const rows = await migrating.db.kysely
      .selectFrom('webhook_attempts')
      .select(['event_id', 'attempt', 'delivery_id', 'ends_delivery', 'trigger'])
      .orderBy('id')
      .execute();
    expect(
      rows.map((r) => [
        Number(r.event_id),
        r.attempt,
        r.delivery_id === null ? null : Number(r.delivery_id),
        r.ends_delivery,
        r.trigger,
      ]),
    ).toEqual([
      [exhausted, 1, null, 0, 'event'],
      [exhausted, 2, null, 0, 'event'],
      [exhausted, 3, null, 1, 'event'],
      [pending, 1, Number(jobId), 0, 'event'],
      [delivered, 1, null, 1, 'event'],
    ]);
    const log = await findAttemptsPage(
      migrating.db.kysely,
      Number(accountId),
      Number(endpointId),
      null,
      'next',
      null,
      10,
    );
    expect(log.map((a) => [a.event_public_id, a.attempt, followUp(a, now)])).toEqual([
      ['evt_delivered00000000000000', 1, { outcome: 'succeeded', nextAttemptAt: null }],
      ['evt_pending0000000000000000', 1, { outcome: 'retry_due', nextAttemptAt: now + 5000 }],
      ['evt_exhausted00000000000000', 3, { outcome: 'failed', nextAttemptAt: null }],
      ['evt_exhausted00000000000000', 2, { outcome: 'retried', nextAttemptAt: null }],
      ['evt_exhausted00000000000000', 1, { outcome: 'retried', nextAttemptAt: null }],
    ]);
  });
});
