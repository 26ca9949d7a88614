import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TokenRevocations } from '../../src/auth/revocations.js';
import { AuthService, CREDENTIAL_CACHE_MS } from '../../src/auth/service.js';
import { systemClock } from '../../src/clock.js';
import { createServices, type Services } from '../../src/services.js';
import { openDb } from '../../src/storage/db.js';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import { createTenant, createTestDb, type Tenant, type TestDb } from '../helpers/app.js';

// A credential read live is kept for CREDENTIAL_CACHE_MS; a revocation made by this process is
// seen at once, one made by another process within that time.

describe('the credential cache', () => {
  let test: TestDb;
  let services: Services;
  let tenant: Tenant;
  let revocations: TokenRevocations;
  let credentials: AuthService;

  beforeEach(async () => {
    test = await createTestDb();
    services = createServices(test.db, { clock: systemClock, accessTokenTtlSeconds: 60 });
    tenant = await createTenant(services);
    // This process's credentials, with revocations the test runs itself.
    revocations = new TokenRevocations();
    credentials = new AuthService(
      test.db.kysely,
      new UnitOfWork(test.db.kysely, systemClock),
      systemClock,
      services.accounts,
      (clientId) => services.apps.requireByClientId(clientId),
      60,
      revocations,
    );
  });
  afterEach(async () => {
    await test.destroy();
  });

  const token = () => credentials.authenticate(tenant.accessToken).then((found) => found?.kind ?? null);
  const revokeInDatabase = () => services.auth.revokeAccessToken(tenant.accessToken);

  it('keeps an access token read live: another process’s revocation is seen within CREDENTIAL_CACHE_MS', async () => {
    const elsewhere = openDb(test.url);
    try {
      expect(await token()).toBe('access_token');
      const revokedAt = performance.now();
      await createServices(elsewhere, { clock: systemClock, accessTokenTtlSeconds: 60 }).auth.revokeAccessToken(
        tenant.accessToken,
      );
      // Kept: this process has not read it since.
      if (performance.now() - revokedAt < CREDENTIAL_CACHE_MS / 2) expect(await token()).toBe('access_token');
      await new Promise((resolve) => setTimeout(resolve, CREDENTIAL_CACHE_MS + 10));
      expect(await token()).toBeNull();
    } finally {
      await elsewhere.close();
    }
  });

  it('forgets every kept access token when this process revokes one', async () => {
    expect(await token()).toBe('access_token');
    await revocations.around(revokeInDatabase);
    expect(await token()).toBeNull();
  });

  it('serves a token read while this process revokes, but does not keep it', async () => {
    let commit!: () => void;
    const revoking = revocations.around(async () => {
      await new Promise<void>((resolve) => {
        commit = resolve;
      });
      await revokeInDatabase();
    });
    // Still live in the database while the revocation is under way.
    expect(await token()).toBe('access_token');
    commit();
    await revoking;
    expect(await token()).toBeNull();
  });
});
