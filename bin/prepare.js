#!/usr/bin/env node
// The `prepare` script: `npm ci` builds dist/ (tsc -p tsconfig.build.json). npx, asked for
// `loyalty` inside this folder, installs the folder as a package of its cache and runs `prepare`
// again: half a minute of tsc before the command starts, rewriting dist/ under a running server
// (issue 49). So under npx (`npm_command` is `exec`) a dist/ built from the sources as they are
// is used as it is; one older than a source (after a `git pull`) is built again, saying why.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = join(root, 'dist', 'cli', 'main.js');

/** The newest modification time of the files below `dir`. */
function newest(dir) {
  let time = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    time = Math.max(time, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return time;
}

if (process.env.npm_command === 'exec' && existsSync(built)) {
  if (newest(join(root, 'src')) <= statSync(built).mtimeMs) process.exit(0);
  process.stderr.write('dist/ is older than src/: building it first (npm run build)\n');
}
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
