import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The service's version: package.json's, read once wherever this module was compiled to (dist/ or
 * src/ under the tests). The one source of `GET /version`, the OpenAPI document's `info.version`,
 * the webhooks' User-Agent and `loyalty --version`.
 */
export const VERSION = packageVersion();

function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file))
      return String((JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? '0.0.0');
    const parent = dirname(dir);
    if (parent === dir) return '0.0.0';
    dir = parent;
  }
}
