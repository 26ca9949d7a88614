#!/usr/bin/env node
// The `prepare` script: `npm ci` builds dist/ (tsc -p tsconfig.build.json). npx, asked for
// `loyalty` inside this folder, installs the folder as a package of its cache and runs `prepare`
// again: half a minute of tsc before the command starts, rewriting dist/ under a running server
// (issue 49). So under npx (`npm_command` is `exec`) a built dist/ is used as it is.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const root = new URL('..', import.meta.url);
if (process.env.npm_command === 'exec' && existsSync(new URL('dist/cli/main.js', root))) process.exit(0);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
