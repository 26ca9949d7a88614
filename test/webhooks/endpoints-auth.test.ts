import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Scope } from '../../src/auth/scopes.js';
import type { Tenant, TestApp } from '../helpers/app.js';
import { type AuthSuiteOptions, describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

// The shared authentication and tenancy cases, on every route of the webhook endpoints room.

let endpointId = 0;
let eventId = '';

// A's endpoint is made by A's app (with a token `loyalty tokens issue` made, as A's access token
// is), so both of A's credentials may reach it: the API key (the merchant's) and the app's token.
const seed = async (t: TestApp, a: Tenant) => {
  const app = await t.services.apps.requireByClientId(a.clientId);
  const endpoint = await t.services.webhooks.create(
    { accountId: a.accountId, appId: app.id, grantId: null, scopes: null },
    {
      url: 'https://receiver.example/a',
      enabled_events: ['*'],
      description: 'A',
    },
  );
  endpointId = endpoint.id;
  eventId = (await t.services.webhooks.sendTest(a.accountId, endpoint.id)).id;
};

/** A's endpoint, exactly as before B's request. */
const expectAUntouched = async (t: TestApp, a: Tenant) => {
  const endpoint = await t.services.webhooks.get(a.accountId, endpointId);
  expect(endpoint).toMatchObject({ url: 'https://receiver.example/a', description: 'A', status: 'enabled' });
  expect((await t.services.webhooks.list(a.accountId, {})).webhook_endpoints).toHaveLength(1);
};

const notFoundForB = async (response: LightMyRequestResponse, t: TestApp, a: Tenant) => {
  expectError(response, 'not_found');
  await expectAUntouched(t, a);
};

const routes: Array<{
  name: string;
  scope: Scope;
  successStatus: AuthSuiteOptions['successStatus'];
  request: () => InjectOptions;
  isolated?: typeof notFoundForB;
}> = [
  {
    name: 'POST /v1/webhook_endpoints',
    scope: 'webhook_endpoint:write',
    successStatus: 201,
    request: () => ({
      method: 'POST',
      url: '/v1/webhook_endpoints',
      payload: { webhook_endpoint: { url: 'https://receiver.example/new', enabled_events: ['customer.created'] } },
    }),
    // B makes its own endpoint: A's list is unchanged.
    isolated: async (response, t, a) => {
      expect(response.statusCode).toBe(201);
      await expectAUntouched(t, a);
    },
  },
  {
    name: 'GET /v1/webhook_endpoints',
    scope: 'webhook_endpoint:read',
    successStatus: 200,
    request: () => ({ method: 'GET', url: '/v1/webhook_endpoints' }),
    isolated: async (response) => {
      expect(response.statusCode).toBe(200);
      expect(response.json().webhook_endpoints).toEqual([]);
    },
  },
  {
    name: 'GET /v1/webhook_endpoints/{id}',
    scope: 'webhook_endpoint:read',
    successStatus: 200,
    request: () => ({ method: 'GET', url: `/v1/webhook_endpoints/${endpointId}` }),
  },
  {
    name: 'PATCH /v1/webhook_endpoints/{id}',
    scope: 'webhook_endpoint:write',
    successStatus: 200,
    request: () => ({
      method: 'PATCH',
      url: `/v1/webhook_endpoints/${endpointId}`,
      payload: { webhook_endpoint: { url: 'https://attacker.example/', description: 'B' } },
    }),
    // The success case changed A's endpoint; B's request must not have.
    isolated: async (response, t, a) => {
      expectError(response, 'not_found');
      expect((await t.services.webhooks.get(a.accountId, endpointId)).description).toBe('A');
    },
  },
  {
    name: 'DELETE /v1/webhook_endpoints/{id}',
    scope: 'webhook_endpoint:write',
    successStatus: 204,
    request: () => ({ method: 'DELETE', url: `/v1/webhook_endpoints/${endpointId}` }),
  },
  {
    name: 'POST /v1/webhook_endpoints/{id}/rotate_secret',
    scope: 'webhook_endpoint:write',
    successStatus: 200,
    request: () => ({ method: 'POST', url: `/v1/webhook_endpoints/${endpointId}/rotate_secret` }),
  },
  {
    name: 'POST /v1/webhook_endpoints/{id}/test',
    scope: 'webhook_endpoint:write',
    successStatus: 202,
    request: () => ({ method: 'POST', url: `/v1/webhook_endpoints/${endpointId}/test` }),
  },
  {
    name: 'GET /v1/webhook_endpoints/{id}/deliveries',
    scope: 'webhook_endpoint:read',
    successStatus: 200,
    request: () => ({ method: 'GET', url: `/v1/webhook_endpoints/${endpointId}/deliveries` }),
  },
  {
    name: 'POST /v1/events/{id}/resend',
    scope: 'webhook_endpoint:write',
    successStatus: 202,
    request: () => ({
      method: 'POST',
      url: `/v1/events/${eventId}/resend`,
      payload: { webhook_endpoint_id: endpointId },
    }),
  },
];

for (const route of routes) {
  describeAuthSuite(route.name, {
    request: route.request,
    scope: route.scope,
    successStatus: route.successStatus,
    seed,
    expectIsolated: route.isolated ?? notFoundForB,
  });
}
