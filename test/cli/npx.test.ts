import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { ROOT } from '../helpers/server-process.js';

// Issue 49: the README's `npx loyalty …`, run in the clone's folder, made npx install the folder
// into its cache and run `prepare` again: tsc for half a minute with no output, rewriting dist/
// under the running server. With an empty npm cache, as a newcomer has, the command must run the
// dist/ that `npm ci` built, without building anything.

let database: TestDatabase;
let cache: string;
beforeEach(async () => {
  database = await createTestDatabase();
  cache = mkdtempSync(join(tmpdir(), 'loyalty-npx-cache-'));
});
afterEach(async () => {
  rmSync(cache, { recursive: true, force: true });
  await database.drop();
});

it('`npx loyalty` with an empty npm cache runs the built command and never rebuilds dist/', async () => {
  const built = `${ROOT}dist/cli/main.js`;
  const before = statSync(built).mtimeMs;
  const { stdout } = await promisify(execFile)('npx', ['loyalty', 'accounts', 'list', '--json'], {
    cwd: ROOT,
    env: { ...process.env, npm_config_cache: cache, npm_config_update_notifier: 'false', DATABASE_URL: database.url },
  });
  expect(JSON.parse(stdout)).toEqual([]);
  expect(statSync(built).mtimeMs).toBe(before);
}, 120_000);
