import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { fixedRule, program } from '../helpers/engine.js';
import { authorize, setupOAuth } from '../oauth/helpers.js';
import type { components, paths } from './loyalty-api.js';

// A client generated from the served document (openapi-typescript: test/client/loyalty-api.d.ts,
// `npm run openapi:types`), calling every operation through openapi-fetch against a listening
// server. `npm run typecheck` compiles this file with `strict`, so a document that stops giving a
// client the types it needs (a union that does not narrow, a body without its required fields)
// fails the typecheck, and an answer that does not match fails here.

const TYPES = fileURLToPath(new URL('./loyalty-api.d.ts', import.meta.url));
const REDOCLY = fileURLToPath(new URL('./redocly.yaml', import.meta.url));
const CLI = fileURLToPath(new URL('../../node_modules/openapi-typescript/bin/cli.js', import.meta.url));

type Client = ReturnType<typeof createClient<paths>>;
const listProducts = (client: Client) => client.GET('/v1/points_products');
/**
 * A points product as openapi-fetch gives it: its `Readable` helper drops the properties whose
 * type is `null` alone (the other exchange type's fields), so the narrowing is checked on both
 * that type and the component's.
 */
type ListedProduct = NonNullable<Awaited<ReturnType<typeof listProducts>>['data']>['points_products'][number];

/** The price of a product, by its exchange type: compiles only if the union narrows. */
function priceOf(product: ListedProduct | components['schemas']['PointsProduct']): string {
  if (product.exchange_type === 'fixed') {
    const price: number = product.points_price;
    return `${price}`;
  }
  const min: number = product.variable_points_min;
  const max: number = product.variable_points_max;
  return `${min}-${max}`;
}

describe('a typed client generated from the served document', () => {
  let t: TestApp;
  let a: Tenant;
  let base: string;
  let token: string;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_SECOND: '1000' });
    a = await createTenant(t.services);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    ({ token } = await program(t.services, a.accountId, (tk) => [fixedRule('Sign up', 100, tk)]));
  });
  afterAll(async () => t?.close());

  const client = (credential: string) =>
    createClient<paths>({ baseUrl: base, headers: { authorization: `Bearer ${credential}` } });

  it('is the committed file: regenerated from the served document, it does not differ', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loyalty-types-'));
    try {
      // The document as `npm run openapi` prints it (the default rate limit is in its text).
      const served = await createTestApp();
      const doc = (await served.app.inject({ method: 'GET', url: '/v1/openapi.json' })).body;
      await served.close();
      writeFileSync(join(dir, 'openapi.json'), doc);
      await promisify(execFile)(process.execPath, [
        CLI,
        join(dir, 'openapi.json'),
        '--redocly',
        REDOCLY,
        '-o',
        join(dir, 'loyalty-api.d.ts'),
      ]);
      const fresh = readFileSync(join(dir, 'loyalty-api.d.ts'), 'utf8').split('\n');
      const committed = readFileSync(TYPES, 'utf8').split('\n');
      const first = fresh.findIndex((line, i) => line !== committed[i]);
      const where = first === -1 ? fresh.length : first;
      // The first line that differs, not 7,000 lines of diff.
      expect(
        { line: where + 1, text: committed[where] },
        'test/client/loyalty-api.d.ts is stale: run npm run openapi:types',
      ).toEqual({ line: where + 1, text: fresh[where] });
      expect(committed.length).toBe(fresh.length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('calls every /v1 operation and the token endpoint, each answer as typed', async () => {
    const api = client(a.apiKey);

    const created = await api.POST('/v1/activities', {
      body: { activity: { token, customer_email: 'jane@example.com', distinct_id: 'o-1' } },
    });
    expect(created.response.status).toBe(201);
    const customerId = created.data!.activity.customer_id;
    expect(created.data!.activity.points_transactions.map((p) => p.points_change)).toEqual([100]);

    const both = await api.POST('/v1/activities', {
      body: { activity: { token, customer_id: customerId, customer_email: 'jane@example.com' } },
    });
    expect(both.response.status).toBe(400);
    expect(both.error!.error.code).toBe('invalid_parameter');
    expect(both.error!.error.details).toEqual([
      {
        field: 'activity.customer_email',
        message: 'must not be sent with customer_id: send exactly one of customer_id and customer_email',
      },
    ]);

    const customer = await api.GET('/v1/customers/{id}', { params: { path: { id: customerId } } });
    expect(customer.data!.customer.state).toBe('member');
    const customers = await api.GET('/v1/customers', { params: { query: { state: 'member', limit: 10 } } });
    expect(customers.data!.customers.map((c) => c.id)).toEqual([customerId]);
    const missing = await api.GET('/v1/customers/{id}', { params: { path: { id: 999_999 } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error!.error.code).toBe('not_found');
    // Each response lists its own codes: this one only not_found.
    type NotFound = paths['/v1/customers/{id}']['get']['responses'][404]['content']['application/json'];
    const only: NotFound['error']['code'] = 'not_found';
    // @ts-expect-error: a code the 404 never carries
    const never: NotFound['error']['code'] = 'invalid_parameter';
    expect([only, never]).toHaveLength(2);

    // Issue 49: an unknown key is a type error of the body's type, as the server refuses it
    // (openapi-fetch infers its init generically, so only the typed body can check a literal).
    type ActivityBody = paths['/v1/activities']['post']['requestBody']['content']['application/json'];
    const typoBody: ActivityBody = {
      activity: {
        token,
        customer_id: customerId,
        // @ts-expect-error: distinctid is not a field of an activity (distinct_id is)
        distinctid: 'o-2',
      },
    };
    const typo = await api.POST('/v1/activities', { body: typoBody });
    expect(typo.error!.error.code).toBe('invalid_parameter');
    expect(typo.error!.error.details![0]!.field).toBe('activity.distinctid');

    // The header as the docs write it (header names are case-insensitive; the types were not).
    const welcome = { points_transaction: { customer_id: customerId, points_change: 50, description: 'Welcome' } };
    const change = await api.POST('/v1/points_transactions', {
      params: { header: { 'Idempotency-Key': 'typed-welcome' } },
      body: welcome,
    });
    expect(change.response.status).toBe(201);
    const replayed = await api.POST('/v1/points_transactions', {
      params: { header: { 'Idempotency-Key': 'typed-welcome' } },
      body: welcome,
    });
    expect(replayed.data!.points_transaction.id).toBe(change.data!.points_transaction.id);

    // An event's data narrows by its type.
    const feed = await api.GET('/v1/events', { params: { query: { type: 'points_transaction.created' } } });
    const credited = feed.data!.events.flatMap((event) =>
      event.type === 'points_transaction.created' ? [event.data.points_transaction.points_change] : [],
    );
    expect(credited.sort()).toEqual([100, 50].sort());
    const zero = await api.POST('/v1/points_transactions', {
      body: { points_transaction: { customer_id: customerId, points_change: 0 } },
    });
    expect(zero.error!.error.message).toBe('points_transaction.points_change must not be 0');
    const ledger = await api.GET('/v1/points_transactions', { params: { query: { customer_id: customerId } } });
    expect(ledger.data!.points_transactions).toHaveLength(2);
    const one = await api.GET('/v1/points_transactions/{id}', {
      params: { path: { id: change.data!.points_transaction.id } },
    });
    expect(one.data!.points_transaction.points_change).toBe(50);

    const bad = await api.GET('/v1/customers', { params: { query: { state: 'gone' as 'member' } } });
    expect(bad.error!.error.details).toEqual([
      { field: 'state', message: 'must be one of candidate, member, disabled' },
    ]);

    await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 10 });
    const tiers = await api.GET('/v1/vip_tiers');
    expect(tiers.data!.vip_tiers.map((tier) => [tier.name, tier.entry_rewards])).toEqual([['Gold', []]]);
    const settings = await api.GET('/v1/points_settings');
    expect(settings.data!.points_settings.points_label.other).toBe('Points');
    const rules = await api.GET('/v1/earning_rules', { params: { query: { limit: 5 } } });
    expect(rules.data!.earning_rules.map((rule) => rule.name)).toEqual(['Sign up']);
    const referral = await api.GET('/v1/referral_settings');
    expect(referral.response.status).toBe(404);

    const [fixed, variable] = (await t.services.pointsProducts.create(a.accountId, [
      { exchange_type: 'fixed', points_price: 100, reward: { name: '$5 off' } },
      {
        exchange_type: 'variable',
        variable_points_step: 10,
        variable_points_step_reward_value: 1,
        variable_points_min: 10,
        variable_points_max: 50,
        reward: { name: '$1 per 10' },
      },
    ])) as { id: number }[];
    const products = await listProducts(api);
    expect(products.data!.points_products.map(priceOf)).toEqual(['10-50', '100']);
    const product = await api.GET('/v1/points_products/{id}', { params: { path: { id: fixed!.id } } });
    expect(priceOf(product.data!.points_product)).toBe('100');
    const bought = await api.POST('/v1/points_products/{id}/purchase', {
      params: { path: { id: variable!.id } },
      body: { customer_id: customerId, points_to_spend: 20 },
    });
    expect(bought.response.status).toBe(201);
    expect(bought.data!.points_purchase.points_spent).toBe(20);
    const rewards = await api.GET('/v1/reward_fulfillments', {
      params: { query: { customer_id: customerId, fulfillment_status: 'issued' } },
    });
    expect(rewards.data!.reward_fulfillments.map((r) => r.code)).toEqual([
      bought.data!.points_purchase.reward_fulfillment.code,
    ]);

    // The app's own operation, with the OAuth token from the token endpoint.
    const f = await setupOAuth(t);
    const { code: grant } = await authorize(t, f);
    const oauth = createClient<paths>({ baseUrl: base });
    const tokens = await oauth.POST('/oauth2/token', {
      body: {
        grant_type: 'authorization_code',
        code: grant,
        redirect_uri: 'https://shop-app.example/oauth/callback',
        client_id: f.clientId,
        client_secret: f.clientSecret ?? undefined,
      },
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(tokens.response.status, JSON.stringify(tokens.error)).toBe(200);
    expect(tokens.response.headers.get('ratelimit-limit')).toBe('1000');
    const identity = await client(tokens.data!.access_token).POST('/v1/customer_identities/create_or_update', {
      body: { customer_identity: { distinct_id: 'crm-1', email: 'jane@example.com' } },
    });
    // The app's account is the OAuth fixture's: a new customer there.
    expect(identity.response.status).toBe(201);
    expect(identity.data!.customer_identity.distinct_id).toBe('crm-1');
    const revoked = await oauth.POST('/oauth2/revoke', {
      body: { token: tokens.data!.refresh_token, client_id: f.clientId, client_secret: f.clientSecret ?? undefined },
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(revoked.response.status).toBe(200);
  });
});
