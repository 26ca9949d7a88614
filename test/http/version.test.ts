import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WEBHOOK_USER_AGENT } from '../../src/webhooks/delivery.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { loyaltyInProcess } from '../helpers/cli.js';
import { ROOT } from '../helpers/server-process.js';

// Issue 49: the version numbers disagreed (package.json 0.1.0, the OpenAPI document 1.0.0) and no
// endpoint told which version answers. package.json's is the one version, everywhere.

const version = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

it("GET /version, the OpenAPI document, the webhooks' User-Agent and loyalty --version carry package.json's version", async () => {
  expect(version).toMatch(/^\d+\.\d+\.\d+/);
  const answer = await t.app.inject({ method: 'GET', url: '/version' });
  expect(answer.statusCode).toBe(200);
  expect(answer.json()).toEqual({ version });
  const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
  expect(doc.info.version).toBe(version);
  expect(doc.paths['/version'].get.operationId).toBe('getVersion');
  expect(WEBHOOK_USER_AGENT).toBe(`loyalty-webhooks/${version}`);
  const cli = await loyaltyInProcess(['--version'], { DATABASE_URL: 'sqlite::memory:' });
  expect(cli.stdout.trim()).toBe(version);
});
