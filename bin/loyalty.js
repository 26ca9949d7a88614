#!/usr/bin/env node
// The `loyalty` admin command. The TypeScript sources are compiled by `npm ci` (the `prepare` script).
import '../dist/cli/main.js';
