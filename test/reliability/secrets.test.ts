import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTenant, type Tenant, testEngine } from '../helpers/app.js';
import { loyaltyInProcess } from '../helpers/cli.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { withServices } from '../helpers/seed.js';
import { eventually } from '../helpers/wait.js';
import { CREATE_OR_UPDATE, rawExchange, send, sendJson, serverOnNewDatabase } from './support.js';

// Keys and tokens never reach the logs (at LOG_LEVEL=trace, the most talkative) nor the CLI's
// listings, whichever way a client sends them: right, wrong, in the query string, in a body, in
// another header, or inside a request the HTTP parser refuses.

interface Secrets {
  tenant: Tenant;
  revokedKey: string;
  expiredToken: string;
  clientSecret: string;
  /** Well-formed but unknown. */
  unknownKey: string;
  unknownToken: string;
}

/** The forms in which a secret could leak: itself, its random part, and common encodings. */
function leakFormsOf(secret: string): string[] {
  const bytes = Buffer.from(secret);
  const random = secret.slice(secret.indexOf('_') + 1);
  const forms = [
    secret,
    bytes.toString('base64'),
    bytes.toString('base64url'),
    bytes.toString('hex'),
    // pino writes a Buffer as {"type":"Buffer","data":[97,112,…]}.
    [...bytes].join(','),
    createHash('sha256').update(secret).digest('hex'),
  ];
  // Any 10 characters in a row of the random part (the redacted form shows 4).
  for (let i = 0; i + 10 <= random.length; i++) forms.push(random.slice(i, i + 10));
  return forms;
}

function findLeaks(text: string, secrets: Record<string, string>): string[] {
  const leaks: string[] = [];
  for (const [name, secret] of Object.entries(secrets)) {
    const form = leakFormsOf(secret).find((f) => text.includes(f));
    if (form) leaks.push(`${name} (as "${form}")`);
  }
  return leaks;
}

describe(`secrets stay out of logs and listings (${testEngine})`, () => {
  const fixture = serverOnNewDatabase(
    (url) =>
      withServices(url, async (services): Promise<Secrets> => {
        const tenant = await createTenant(services, 'Secret shop');
        await services.referralSettings.set(tenant.accountId, referralSettingsFixture);
        const revoked = await services.auth.createApiKey(tenant.accountId);
        await services.auth.revokeApiKey(revoked.id);
        const expired = await services.auth.issueAccessToken({
          accountId: tenant.accountId,
          clientId: tenant.clientId,
          ttlSeconds: 1,
        });
        const app = await services.apps.create({ name: 'Secret app', redirectUris: ['https://app.example/cb'] });
        const random = () =>
          randomBytes(30)
            .toString('base64')
            .replace(/[^A-Za-z0-9]/g, '')
            .slice(0, 40);
        return {
          tenant,
          revokedKey: revoked.key,
          expiredToken: expired.access_token,
          clientSecret: app.client_secret!,
          unknownKey: `api_${random()}`,
          unknownToken: `oa2_${random()}`,
        };
      }),
    { LOG_LEVEL: 'trace', RATE_LIMIT_PER_SECOND: '1000', AUTH_FAILURES_PER_MINUTE: '0' },
  );
  /** Every secret of the fixture, by name. */
  const allOf = (s: Secrets): Record<string, string> => ({
    apiKey: s.tenant.apiKey,
    accessToken: s.tenant.accessToken,
    revokedKey: s.revokedKey,
    expiredToken: s.expiredToken,
    clientSecret: s.clientSecret,
    unknownKey: s.unknownKey,
    unknownToken: s.unknownToken,
  });

  it('logs none of them at LOG_LEVEL=trace, however a client sends them', async () => {
    const { server, seeded: s } = fixture;
    const all = allOf(s);
    // Until the 1-second token has expired; the server's start usually took longer already.
    expect(
      await eventually(
        async () => (await sendJson(server.url, 'GET', '/v1/earning_rules', s.expiredToken)).status === 401,
        5000,
      ),
    ).toBe(true);
    const routes = ['/v1/referral_settings', '/v1/earning_rules', CREATE_OR_UPDATE];
    const identity = { customer_identity: { distinct_id: 'secret-1', email: 'secret@example.com' } };
    let answered = 0;
    const ask = async (...args: Parameters<typeof sendJson>) => {
      const reply = await sendJson(...args);
      answered++;
      return reply;
    };
    for (const [name, secret] of Object.entries(all)) {
      for (const path of routes) {
        const method = path === CREATE_OR_UPDATE ? 'POST' : 'GET';
        const body = method === 'POST' ? identity : undefined;
        // In the Authorization header, right and with the wrong scheme or extra words.
        await ask(server.url, method, path, secret, body);
        await ask(server.url, method, path, null, body, { headers: { authorization: `Token ${secret}` } });
        await ask(server.url, method, path, null, body, { headers: { authorization: `Bearer ${secret} extra` } });
        await ask(server.url, method, path, null, body, {
          headers: { authorization: `Basic ${Buffer.from(`${secret}:`).toString('base64')}` },
        });
        // In other headers, by mistake.
        await ask(server.url, method, path, null, body, {
          headers: { 'x-api-key': secret, cookie: `session=${secret}`, 'x-request-id': secret },
        });
        // In the query string, by mistake, with and without a good credential.
        for (const query of [`api_key=${secret}`, `access_token=${secret}`, `cursor=${secret}`, `limit=${secret}`]) {
          await ask(server.url, method, `${path}?${query}`, s.tenant.accessToken, body);
          await ask(server.url, method, `${path}?${query}`, null, body);
        }
      }
      // In the path of an unknown route, and in refused or malformed bodies (never stored).
      await ask(server.url, 'GET', `/v1/${secret}`, s.tenant.apiKey);
      await ask(server.url, 'POST', CREATE_OR_UPDATE, s.tenant.accessToken, {
        customer_identity: { distinct_id: `id-${name}`, email: secret },
      });
      await ask(server.url, 'POST', CREATE_OR_UPDATE, s.tenant.accessToken, {
        customer_identity: { distinct_id: 'x', email: 'secret@example.com', api_key: secret },
      });
      await ask(server.url, 'POST', CREATE_OR_UPDATE, s.tenant.accessToken, { access_token: secret });
      // At the OAuth endpoints, where clients send secrets in form bodies and Basic credentials.
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const basic = `Basic ${Buffer.from(`${s.tenant.clientId}:${secret}`).toString('base64')}`;
      for (const [path, body, headers] of [
        ['/oauth2/token', `grant_type=refresh_token&refresh_token=${secret}&client_id=${s.tenant.clientId}`, form],
        ['/oauth2/token', `grant_type=authorization_code&code=${secret}&client_secret=${secret}`, form],
        ['/oauth2/token', 'grant_type=client_credentials', { ...form, authorization: basic }],
        [`/oauth2/token?client_secret=${secret}`, 'grant_type=refresh_token', form],
        ['/oauth2/revoke', `token=${secret}&client_id=${s.tenant.clientId}`, form],
      ] as const) {
        const reply = await send(server.url, { method: 'POST', path, headers, body });
        expect(reply.status, `${path}: ${reply.body}`).toBeLessThan(500);
        answered++;
      }
      const malformed = await send(server.url, {
        method: 'POST',
        path: CREATE_OR_UPDATE,
        headers: { authorization: `Bearer ${s.tenant.accessToken}`, 'content-type': 'application/json' },
        body: `{"customer_identity": {"distinct_id": "${secret}", `,
      });
      expect(malformed.status).toBe(400);
      answered++;
      // Inside requests the HTTP parser refuses (its error, with the raw bytes, is logged at trace).
      await rawExchange(server.port, [
        `GET /v1/earning_rules HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nBad header\r\n\r\n`,
      ]);
      await rawExchange(server.port, [`GET /v1/earning_rules?key=${secret} HTTP/1.1\r\nHost: x\r\nX: \u0001\r\n\r\n`]);
    }
    expect(answered).toBeGreaterThan(200);
    expect(await server.stop('SIGTERM')).toBe(0);
    const logs = server.output();
    // The logs were written, at trace level, with the requests in them.
    expect(logs).toMatch(/"msg":"incoming request"/);
    expect(logs).toMatch(/"level":10/);
    expect(findLeaks(logs, all)).toEqual([]);
  });

  it("keeps them out of the CLI's listings, text and --json", async () => {
    const { database, seeded: s } = fixture;
    const all = allOf(s);
    const env = { DATABASE_URL: database.url };
    const account = String(s.tenant.accountId);
    const commands = [
      ['accounts', 'list'],
      ['api-keys', 'list', '--account', account],
      ['apps', 'list'],
      ['customers', 'list', '--account', account],
      ['customer-identities', 'list', '--account', account],
      ['earning-rules', 'list', '--account', account, '--all'],
      ['referral-settings', 'show', '--account', account],
    ];
    const runs = commands.flatMap((command) => [command, [...command, '--json']]);
    // The CLI's program in this process, one command after another (test/cli runs the real one).
    const results = [];
    for (const args of runs) results.push(await loyaltyInProcess(args, env));
    for (const [i, result] of results.entries()) {
      expect(result.code, `${runs[i]!.join(' ')}: ${result.stderr}`).toBe(0);
    }
    const output = results.map((result) => result.stdout + result.stderr).join('\n');
    // The listings did run and show the redacted forms.
    expect(output).toContain(`${s.tenant.apiKey.slice(0, 8)}…`);
    expect(output).toContain(s.tenant.clientId);
    expect(findLeaks(output, all)).toEqual([]);
  });
});
