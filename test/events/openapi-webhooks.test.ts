import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPE_NAMES, EVENT_TYPES, type EventType } from '../../src/events/catalog.js';
import type { Event, EventsPage } from '../../src/events/schemas.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { fixedRule, program } from '../helpers/engine.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';

// The served document's `webhooks` section: one entry per event type of the catalog, whose body
// schema accepts the events the services really write (read back through the feed, as a webhook
// sends them) and refuses a changed one.

describe('the OpenAPI document: webhooks', () => {
  let t: TestApp;
  let a: Tenant;
  let doc: any;
  let events: Event[];
  let validators: Map<string, ReturnType<Ajv2020.default['compile']>>;

  beforeAll(async () => {
    t = await createTestApp();
    a = await createTenant(t.services);
    const key = bearer(a.apiKey);

    // Every change of the catalog, through the API and the services, as a merchant makes them.
    await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });
    const { token } = await program(t.services, a.accountId, (tk) => [fixedRule('Sign up', 150, tk)]);
    const activity = await t.app.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: key,
      payload: { activity: { token, customer_email: 'jane@example.com', distinct_id: 'signup-1' } },
    });
    expect(activity.statusCode, activity.body).toBe(201);
    const jane = activity.json().activity.customer_id as number;
    await t.services.customers.setState(jane, 'disabled');
    await t.services.customers.setState(jane, 'member');
    const [product] = (await t.services.pointsProducts.create(a.accountId, [
      { exchange_type: 'fixed', points_price: 100, reward: { name: '$5 off' } },
    ])) as Array<{ id: number }>;
    const purchase = await t.app.inject({
      method: 'POST',
      url: `/v1/points_products/${product!.id}/purchase`,
      headers: key,
      payload: { customer_id: jane },
    });
    expect(purchase.statusCode, purchase.body).toBe(201);
    // Her code used, then a second one cancelled (its points given back).
    const used = await t.app.inject({
      method: 'POST',
      url: `/v1/reward_fulfillments/${purchase.json().points_purchase.reward_fulfillment.id}/use`,
      headers: key,
    });
    expect(used.statusCode, used.body).toBe(200);
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: jane, points_change: 100 });
    const second = (await t.services.pointsProducts.purchase(a.accountId, product!.id, { customer_id: jane }))
      .reward_fulfillment;
    const cancelled = await t.app.inject({
      method: 'POST',
      url: `/v1/reward_fulfillments/${second.id}/cancel`,
      headers: key,
    });
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    // A referral by Jane, and her friend's first order completing it.
    await t.services.referralSettings.set(a.accountId, {
      ...referralSettingsFixture,
      qualifying_activity_token: token,
      landing_url: 'https://shop.example/',
    });
    const referral = await t.app.inject({
      method: 'POST',
      url: '/v1/referrals',
      headers: key,
      payload: { referral: { sender_customer_id: jane, receiver_customer_email: 'friend@example.com' } },
    });
    expect(referral.statusCode, referral.body).toBe(201);
    const order = await t.app.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: key,
      payload: { activity: { token, customer_email: 'friend@example.com', distinct_id: 'friend-1' } },
    });
    expect(order.statusCode, order.body).toBe(201);
    // Points that expire: the reminders (Jane's, her friend's), 14 days before (the clock moved last: nothing after depends on it).
    await t.services.pointsSettings.set(a.accountId, { points_expiry: { inactivity_days: 30 } });
    t.clock.advance(17 * 86_400_000);
    expect((await t.services.pointsExpiry.runOnce()).reminded).toBeGreaterThan(0);
    // A test event is written alone, as POST /v1/webhook_endpoints/{id}/test writes it.
    await new UnitOfWork(t.db.kysely, t.clock).run((w) => t.services.events.recordAlone(w, a.accountId, 'ping', {}));

    const feed = await t.app.inject({ method: 'GET', url: '/v1/events?limit=250', headers: key });
    expect(feed.statusCode, feed.body).toBe(200);
    events = feed.json<EventsPage>().events;

    const served = await t.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    expect(served.statusCode).toBe(200);
    doc = served.json();
    // The document's schemas as one JSON Schema 2020-12 resource, each webhook's body a $ref into it.
    const ajv = addFormats.default(new Ajv2020.default({ strict: false, allErrors: true }));
    ajv.addSchema({ $id: 'https://loyalty.test/openapi.json', components: doc.components });
    validators = new Map(
      Object.entries(doc.webhooks as Record<string, any>).map(([type, item]) => {
        const schema = item.post.requestBody.content['application/json'].schema;
        return [type, ajv.compile({ $ref: `https://loyalty.test/openapi.json${schema.$ref}` })];
      }),
    );
  });
  afterAll(async () => t?.close());

  it('has one webhook per event type of the catalog, each a signed POST', () => {
    expect(Object.keys(doc.webhooks)).toEqual(EVENT_TYPE_NAMES);
    for (const type of EVENT_TYPE_NAMES) {
      const operation = doc.webhooks[type].post;
      expect(operation.requestBody.required).toBe(true);
      expect(operation.security).toEqual([]);
      expect(Object.keys(operation.responses)).toContain('2XX');
      expect(operation.description).toContain(`\`${EVENT_TYPES[type].scope}\``);
      const headers = operation.parameters.map(
        (p: { $ref: string }) => doc.components.parameters[p.$ref.split('/').pop()!],
      );
      expect(headers.map((h: { name: string; in: string; required: boolean }) => [h.name, h.in, h.required])).toEqual([
        ['webhook-id', 'header', true],
        ['webhook-timestamp', 'header', true],
        ['webhook-signature', 'header', true],
      ]);
    }
    // The resources' own components, shared with the routes.
    const data = (type: EventType) =>
      doc.components.schemas[
        doc.webhooks[type].post.requestBody.content['application/json'].schema.$ref.split('/').pop()
      ].properties.data;
    expect(data('customer.created').properties.customer).toEqual({ $ref: '#/components/schemas/Customer' });
    expect(data('points_purchase.created').properties.points_purchase).toEqual({
      $ref: '#/components/schemas/PointsPurchase',
    });
    expect(data('customer.vip_tier_changed').properties.vip_tier_change).toEqual({
      $ref: '#/components/schemas/VipTierChange',
    });
  });

  it('describes every real event: each body schema accepts the events of its type', () => {
    const made = new Set(events.map((event) => event.type));
    for (const type of EVENT_TYPE_NAMES) expect(made, `a real ${type} event`).toContain(type);
    for (const event of events) {
      const validate = validators.get(event.type)!;
      expect(validate(event), `${event.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it('refuses a changed event: a wrong field, a missing one, or another type', () => {
    const byType = (type: EventType) => events.find((event) => event.type === type)!;
    const purchase = byType('points_purchase.created');
    const validate = validators.get('points_purchase.created')!;
    expect(validate(purchase)).toBe(true);
    const points = purchase.data.points_purchase as Record<string, unknown>;
    expect(validate({ ...purchase, data: { points_purchase: { ...points, points_spent: '100' } } })).toBe(false);
    const { reward_fulfillment: _, ...without } = points;
    expect(validate({ ...purchase, data: { points_purchase: without } })).toBe(false);
    expect(validate({ ...purchase, type: 'customer.created' })).toBe(false);
    expect(validate({ ...purchase, id: 'pur_1' })).toBe(false);
    expect(validators.get('customer.created')!(byType('activity.created'))).toBe(false);
    expect(validators.get('ping')!({ ...byType('ping'), data: { x: 1 } })).toBe(false);
  });
});
