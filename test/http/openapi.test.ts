import type { LightMyRequestResponse } from 'fastify';
import { OpenAPIBackend, SetMatchType } from 'openapi-backend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { earningRuleFixture, referralSettingsFixture } from '../helpers/fixtures.js';

// The served document, checked by a response validator from the npm registry (openapi-backend,
// Ajv underneath) the way a validating proxy checks traffic: every real answer must validate,
// and a wrong value planted in one must not.
describe('the OpenAPI document, used by a response validator', () => {
  let t: TestApp;
  let a: Tenant;
  let doc: any;
  let api: OpenAPIBackend;

  beforeAll(async () => {
    t = await createTestApp({ PUBLIC_URL: 'https://loyalty.example.com/', RATE_LIMIT_PER_SECOND: '1000' });
    a = await createTenant(t.services);
    await t.services.referralSettings.set(a.accountId, referralSettingsFixture);
    await t.services.earningRules.create(a.accountId, [
      earningRuleFixture('plain'),
      {
        ...earningRuleFixture('every field'),
        action_text: 'Shop now',
        action_url: 'https://shop.example.com/',
        restricted_to_vip_tier_ids: [2, 3],
        reward_value: { type: 'variable', variable: { value: 5, per_amount: 1 } },
        earning_limit: { max: 3, type: 'rolling', rolling: { unit: 'month', unit_count: 1 } },
      },
      { ...earningRuleFixture('lifetime'), earning_limit: { max: 1, type: 'lifetime' } },
    ]);
    const response = await t.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    expect(response.statusCode).toBe(200);
    doc = response.json();
    // `quick` skips its check of the document itself, which knows OpenAPI 3.0 only (.ci/run lints
    // the 3.1 document with Redocly and Spectral). Its response validation is Ajv: JSON Schema, as
    // the schemas of OpenAPI 3.1 are.
    api = new OpenAPIBackend({ definition: doc, validate: true, strict: true, quick: true });
    await api.init();
  });
  afterAll(async () => t?.close());

  const check = (operationId: string, response: LightMyRequestResponse, body: unknown = response.json()) =>
    api.validateResponse(body, operationId, response.statusCode);
  const errorsOf = (result: { errors?: Array<{ instancePath: string }> | null }) =>
    (result.errors ?? []).map((e) => e.instancePath);
  const rules = () => t.app.inject({ method: 'GET', url: '/v1/earning_rules?limit=10', headers: bearer(a.apiKey) });

  it('accepts every real answer of every operation', async () => {
    const listed = await rules();
    expect(listed.statusCode).toBe(200);
    // The nullable fields appear both null and set, and the limit in each of its three forms.
    const values = listed.json().earning_rules;
    expect(values.map((r: { action_url: unknown }) => r.action_url)).toContain(null);
    expect(values.map((r: { earning_limit: unknown }) => r.earning_limit)).toContain(null);
    expect(check('listEarningRules', listed)).toMatchObject({ valid: true });

    const settings = await t.app.inject({ method: 'GET', url: '/v1/referral_settings', headers: bearer(a.apiKey) });
    expect(check('getReferralSettings', settings)).toMatchObject({ valid: true });

    const payload = { customer_identity: { distinct_id: 'crm-1', email: 'jane@example.com', last_name: null } };
    const url = '/v1/customer_identities/create_or_update';
    const created = await t.app.inject({ method: 'POST', url, payload, headers: bearer(a.accessToken) });
    expect(created.statusCode).toBe(201);
    expect(check('createOrUpdateCustomerIdentity', created)).toMatchObject({ valid: true });

    for (const [operationId, response] of [
      [
        'listEarningRules',
        await t.app.inject({ method: 'GET', url: '/v1/earning_rules?limit=0', headers: bearer(a.apiKey) }),
      ],
      ['listEarningRules', await t.app.inject({ method: 'GET', url: '/v1/earning_rules' })],
      [
        'createOrUpdateCustomerIdentity',
        await t.app.inject({ method: 'POST', url, payload, headers: bearer(a.apiKey) }),
      ],
      ['checkReadiness', await t.app.inject({ method: 'GET', url: '/readyz' })],
      ['checkLiveness', await t.app.inject({ method: 'GET', url: '/healthz' })],
    ] as const) {
      expect(response.statusCode, operationId).toBeLessThan(500);
      expect(check(operationId, response), `${operationId} ${response.statusCode}`).toMatchObject({ valid: true });
    }
  });

  it('catches a wrong value planted in an answer, in each nullable field', async () => {
    const body = (await rules()).json();
    const plant = (field: string, value: unknown) => ({
      ...body,
      earning_rules: [{ ...body.earning_rules[0], [field]: value }, ...body.earning_rules.slice(1)],
    });
    const response = await rules();
    for (const [field, value] of [
      ['action_url', 5],
      ['action_text', { text: 'x' }],
      ['earning_limit', 'x'],
      ['earning_limit', { max: 3, type: 'weekly' }],
      ['reward_value', { type: 'fixed' }],
    ] as const) {
      const result = check('listEarningRules', response, plant(field, value));
      expect(result.valid, `${field}: ${JSON.stringify(value)}`).toBe(false);
      expect(errorsOf(result).some((path) => path.startsWith(`/earning_rules/0/${field}`))).toBe(true);
    }
    const settings = (
      await t.app.inject({ method: 'GET', url: '/v1/referral_settings', headers: bearer(a.apiKey) })
    ).json();
    settings.referral_settings.sender_reward.image.content_type = 7;
    expect(api.validateResponse(settings, 'getReferralSettings', 200).valid).toBe(false);
  });

  it('writes every null branch as a JSON Schema null type, never as a nullable object', () => {
    const text = JSON.stringify(doc);
    expect(doc.openapi).toBe('3.1.0');
    expect(text).not.toContain('"nullable"');
    expect(text).not.toContain('"enum":[null]');
    const rule = doc.components.schemas.EarningRule.properties;
    expect(rule.action_url.anyOf).toContainEqual({ type: 'null' });
    expect(rule.earning_limit.anyOf).toEqual([
      { $ref: '#/components/schemas/RollingEarningLimit' },
      { $ref: '#/components/schemas/LifetimeEarningLimit' },
      { type: 'null' },
    ]);
  });

  it('names the resources, the servers and the OAuth2 flow from the public URL', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: 'https://loyalty.example.com' })]);
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['ReferralSettings', 'CustomerIdentity', 'EarningRule', 'PointsProduct']),
    );
    expect(doc.components.securitySchemes.oauth2.flows.authorizationCode).toEqual({
      authorizationUrl: 'https://loyalty.example.com/oauth2/authorize',
      tokenUrl: 'https://loyalty.example.com/oauth2/token',
      refreshUrl: 'https://loyalty.example.com/oauth2/token',
      scopes: expect.objectContaining({ 'earning_rule:read': expect.any(String) }),
    });
  });

  it('states each operation’s credential and scope, and no credential on public ones', () => {
    const security = Object.fromEntries(
      Object.values(doc.paths).flatMap((ops: any) =>
        Object.values(ops).map((op: any) => [op.operationId, op.security]),
      ),
    );
    expect(security).toMatchObject({
      getReferralSettings: [{ bearerAuth: ['referral_settings:read'] }, { oauth2: ['referral_settings:read'] }],
      listEarningRules: [{ bearerAuth: ['earning_rule:read'] }, { oauth2: ['earning_rule:read'] }],
      createOrUpdateCustomerIdentity: [{ oauth2: ['customer_identity:write'] }],
      checkLiveness: [],
      checkReadiness: [],
      getOpenApiDocument: [],
      requestToken: [],
      revokeToken: [],
    });
    for (const [operationId, value] of Object.entries(security)) expect(value, operationId).toBeDefined();
  });

  it('declares the headers every answer carries, and they validate', async () => {
    const operation = doc.paths['/v1/earning_rules'].get;
    expect(Object.keys(operation.responses['200'].headers).sort()).toEqual([
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'X-Request-Id',
    ]);
    expect(Object.keys(operation.responses['429'].headers)).toContain('Retry-After');
    expect(Object.keys(doc.paths['/readyz'].get.responses['503'].headers)).toContain('Retry-After');
    expect(Object.keys(doc.paths['/healthz'].get.responses['200'].headers)).toEqual(['X-Request-Id']);
    // `superset`: every header the document declares for the answer is there, with its type.
    const response = await rules();
    const validate = (headers: object) =>
      api.validateResponseHeaders(headers, 'listEarningRules', {
        statusCode: 200,
        setMatchType: SetMatchType.Superset,
      });
    expect(validate(response.headers)).toMatchObject({ valid: true });
    const { 'x-request-id': _, ...missing } = response.headers;
    expect(validate(missing).valid).toBe(false);
    expect(validate({ ...response.headers, 'ratelimit-remaining': 'many' }).valid).toBe(false);
  });
});

describe('the /docs page', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  it('may not be framed, and runs only its own scripts', async () => {
    for (const url of ['/docs', '/docs/', '/docs/static/index.html', '/docs/static/swagger-initializer.js']) {
      const response = await t.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBeLessThan(400);
      const csp = String(response.headers['content-security-policy']);
      expect(csp, url).toContain("frame-ancestors 'none'");
      expect(csp, url).toContain("script-src 'self'");
      expect(csp, url).not.toContain('unsafe-eval');
      expect(response.headers['x-frame-options'], url).toBe('DENY');
    }
  });
});
