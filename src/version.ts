import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's folder, where package.json is, wherever this module was compiled to (dist/,
 * dist-bench/src/, or src/ itself under the tests). Files tsc does not copy are read from there.
 */
export const PACKAGE_ROOT = packageRoot();

/**
 * The service's version: package.json's, read once. The one source of `GET /version`, the
 * OpenAPI document's `info.version`, the webhooks' User-Agent and `loyalty --version`.
 */
export const VERSION = String(
  (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: string }).version ?? '0.0.0',
);

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return dir;
}
