import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDb } from '../../src/storage/db.js';

// Every operation the OpenAPI document secures runs the shared authentication and tenancy suite
// (test/helpers/auth-suite.ts): a new route cannot land without its unauthenticated, revoked,
// expired, scope and other-account cases. A suite is named for its operation, `METHOD /path` as
// the document writes it, in a file that imports the suite.

const TESTS = resolve(import.meta.dirname, '..');
const OPERATION_NAME = /'((?:GET|POST|PUT|PATCH|DELETE) \/[^' ]*)'/g;

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return path.endsWith('.test.ts') ? [path] : [];
  });
}

/** The operations named in the files that run the suite. */
function suiteNames(): Set<string> {
  const names = new Set<string>();
  for (const file of testFiles(TESTS)) {
    const text = readFileSync(file, 'utf8');
    if (!text.includes('describeAuthSuite(')) continue;
    for (const match of text.matchAll(OPERATION_NAME)) names.add(match[1]!);
  }
  return names;
}

/** The document's operations that ask for a credential, as `METHOD /path`. */
async function securedOperations(): Promise<string[]> {
  const db = openDb('sqlite::memory:');
  const app = await buildApp({ config: loadConfig({ LOG_LEVEL: 'silent' }, { listening: false }), db, logger: false });
  try {
    await app.ready();
    const document = app.swagger() as { paths: Record<string, Record<string, { security?: unknown[] }>> };
    return Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => (operation.security?.length ?? 0) > 0)
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
  } finally {
    await app.close();
    await db.close();
  }
}

it('runs the shared auth suite on every secured operation of the OpenAPI document', async () => {
  const secured = await securedOperations();
  expect(secured.length).toBeGreaterThan(30);
  const covered = suiteNames();
  expect(secured.filter((operation) => !covered.has(operation))).toEqual([]);
});
