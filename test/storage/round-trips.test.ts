import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp, testEngine } from '../helpers/app.js';
import { fixedRule, program } from '../helpers/engine.js';

// The round trips of a write (issue 33): each statement of a write's transaction is a wait for the
// database, and on PostgreSQL they bound what a node serves. A write that shows a customer reads
// the account's program (tiers and points expiry) once; on PostgreSQL the statement that writes
// the events reads the account's webhook subscribers too, so the fan-out has no read of its own.
// The behaviour (which endpoints get a delivery) is tested in test/webhooks/endpoints.test.ts.

let t: TestApp;
let a: Tenant;
let recording: string[] | null = null;

beforeAll(async () => {
  t = await createTestApp(
    {},
    {
      onQuery: (query) => {
        recording?.push(query.sql.replace(/\s+/g, ' '));
      },
    },
  );
  a = await createTenant(t.services);
});

afterAll(async () => t?.close());

/** The statements `write` ran. */
async function statementsOf(write: () => Promise<unknown>): Promise<string[]> {
  recording = [];
  try {
    await write();
    return recording;
  } finally {
    recording = null;
  }
}

async function post(url: string, payload: object, token = a.apiKey) {
  const response = await t.app.inject({ method: 'POST', url, headers: bearer(token), payload });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json();
}

const reading = (table: string) => (statement: string) => new RegExp(`from "${table}"`).test(statement);

describe('the round trips of the write routes', () => {
  let token: string;
  let productId: number;
  let customerId: number;

  beforeAll(async () => {
    ({ token } = await program(t.services, a.accountId, (type) => [fixedRule('Order', 500, type)]));
    await t.services.pointsSettings.set(a.accountId, { points_expiry: { inactivity_days: 365 } });
    await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 1000 });
    const [product] = (await t.services.pointsProducts.create(a.accountId, [
      { exchange_type: 'fixed', points_price: 100, reward: { name: '$1 off' } },
    ])) as { id: number }[];
    productId = product!.id;
    await post('/v1/webhook_endpoints', {
      webhook_endpoint: { url: 'https://receiver.example/hooks', enabled_events: ['*'] },
    });
    const first = await post('/v1/activities', {
      activity: { token, customer_email: 'jane@example.com', distinct_id: 'order-0' },
    });
    customerId = first.activity.customer_id;
  });

  // Each call a new order, purchase or identity: a replay would write nothing.
  let n = 0;
  const writes: [string, () => Promise<unknown>][] = [
    [
      'an activity',
      () => post('/v1/activities', { activity: { token, customer_id: customerId, distinct_id: `order-${++n}` } }),
    ],
    ['a purchase', () => post(`/v1/points_products/${productId}/purchase`, { customer_id: customerId })],
    [
      'a create_or_update',
      () =>
        post(
          '/v1/customer_identities/create_or_update',
          { customer_identity: { distinct_id: `crm-${++n}`, email: `new-${n}@example.com` } },
          a.accessToken,
        ),
    ],
  ];

  it.each(writes)('%s reads the program and its points expiry in one statement', async (_name, write) => {
    const statements = await statementsOf(write);
    const settings = statements.filter(reading('points_settings'));
    expect(settings).toHaveLength(0);
    const programs = statements.filter((statement) => /left join "points_settings"/.test(statement));
    expect(programs).toHaveLength(1);
    expect(programs[0]).toMatch(/left join "vip_tiers"/);
  });

  it.each(writes)(
    '%s reads the webhook subscribers with its events on PostgreSQL, apart on SQLite',
    async (_name, write) => {
      const statements = await statementsOf(write);
      const subscribers = statements.filter(reading('webhook_endpoints'));
      expect(subscribers).toHaveLength(1);
      if (testEngine === 'postgres') expect(subscribers[0]).toMatch(/^with "inserted" as \(insert into "events"/);
      else expect(subscribers[0]).toMatch(/^select "id", "event_types" from "webhook_endpoints"/);
    },
  );
});
