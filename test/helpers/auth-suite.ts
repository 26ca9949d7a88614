import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ALL_SCOPES, type Scope } from '../../src/auth/scopes.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from './app.js';
import { expectError } from './contract.js';

export interface AuthSuiteOptions {
  /** The route's request, without the Authorization header. */
  request: () => InjectOptions;
  scope: Scope;
  /** The route accepts only OAuth access tokens. */
  accessTokenOnly?: boolean;
  /** The status of the route's answer to `request` with a valid credential, on the data `seed` made. */
  successStatus: 200 | 201 | 202 | 204;
  /**
   * Creates account A's data that the route could reveal or change. The suite's database holds
   * the accounts of its earlier tests too: ids are those of what the seed made, never a fresh
   * database's 1.
   */
  seed: (t: TestApp, a: Tenant) => Promise<void>;
  /** Asserts that B's answer reveals and changed nothing of A's. */
  expectIsolated: (response: LightMyRequestResponse, t: TestApp, a: Tenant, b: Tenant) => Promise<void> | void;
}

/**
 * The authentication and tenancy cases every route must pass: no header, wrong scheme, unknown,
 * revoked and expired credentials, a missing scope, and another account's credential. The cases
 * share one app and database (building an app costs 0.3 to 1 s, a hundred times an account, and a
 * suite has nine cases); each makes accounts of its own, A and B, so they pass in any order.
 */
export function describeAuthSuite(name: string, options: AuthSuiteOptions): void {
  describe(`${name}: authentication and tenancy`, () => {
    let t: TestApp;
    let a: Tenant;
    const send = (headers: Record<string, string>) => {
      const request = options.request();
      return t.app.inject({ ...request, headers: { ...request.headers, ...headers } });
    };
    const goodCredential = () => (options.accessTokenOnly ? a.accessToken : a.apiKey);

    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(async () => t?.close());
    beforeEach(async () => {
      a = await createTenant(t.services, 'Shop A');
      await options.seed(t, a);
    });

    it('accepts a valid credential with the scope', async () => {
      const response = await send(bearer(goodCredential()));
      expect(response.statusCode, response.body).toBe(options.successStatus);
    });

    it('refuses a request without Authorization: 401 and a bare Bearer challenge', async () => {
      const response = await send({});
      expectError(response, 'unauthorized');
      expect(response.headers['www-authenticate']).toBe('Bearer realm="loyalty"');
    });

    it('refuses another scheme: 401', async () => {
      const response = await send({ authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` });
      expectError(response, 'unauthorized');
      expect(response.headers['www-authenticate']).toBe('Bearer realm="loyalty"');
    });

    it('refuses an unknown key and a malformed token: 401 invalid_token', async () => {
      for (const token of ['api_0000000000000000000000000000000000000000', 'oa2_nope', 'garbage-token!']) {
        const response = await send(bearer(token));
        expectError(response, 'unauthorized');
        expect(response.headers['www-authenticate']).toBe('Bearer realm="loyalty", error="invalid_token"');
      }
    });

    // Each credential is used first, so the process holds it when it is revoked.
    it('refuses a revoked API key: 401', async () => {
      expect((await send(bearer(a.apiKey))).statusCode).not.toBe(401);
      await t.services.auth.revokeApiKey(a.apiKeyId);
      expectError(await send(bearer(a.apiKey)), 'unauthorized');
    });

    it('refuses a revoked access token: 401', async () => {
      expect((await send(bearer(a.accessToken))).statusCode).not.toBe(401);
      await t.services.auth.revokeAccessToken(a.accessToken);
      expectError(await send(bearer(a.accessToken)), 'unauthorized');
    });

    it('refuses an expired access token: 401', async () => {
      const token = await t.services.auth.issueAccessToken({
        accountId: a.accountId,
        clientId: a.clientId,
        ttlSeconds: 60,
      });
      t.clock.advance(59_000);
      expect((await send(bearer(token.access_token))).statusCode).toBe(options.successStatus);
      t.clock.advance(1_000);
      const response = await send(bearer(token.access_token));
      expectError(response, 'unauthorized');
      expect(response.headers['www-authenticate']).toContain('error="invalid_token"');
    });

    it('refuses a credential without the scope: 403 insufficient_scope', async () => {
      const others = ALL_SCOPES.filter((s) => s !== options.scope && !s.startsWith(`${options.scope.split(':')[0]}:`));
      const weak = options.accessTokenOnly
        ? (
            await t.services.auth.issueAccessToken({
              accountId: a.accountId,
              clientId: a.clientId,
              scopes: others,
            })
          ).access_token
        : (await t.services.auth.createApiKey(a.accountId, others)).key;
      const response = await send(bearer(weak));
      expectError(response, 'insufficient_scope');
      expect(response.headers['www-authenticate']).toBe(
        `Bearer realm="loyalty", error="insufficient_scope", scope="${options.scope}"`,
      );
    });

    if (options.accessTokenOnly) {
      it('refuses an API key whatever its scopes: 403 oauth_token_required', async () => {
        expectError(await send(bearer(a.apiKey)), 'oauth_token_required');
      });
    }

    it("gives another account's credential nothing of this account", async () => {
      const b = await createTenant(t.services, 'Shop B');
      const response = await send(bearer(options.accessTokenOnly ? b.accessToken : b.apiKey));
      await options.expectIsolated(response, t, a, b);
    });
  });
}
