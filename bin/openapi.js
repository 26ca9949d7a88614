#!/usr/bin/env node
// Prints the OpenAPI document (`npm run openapi`), built from the compiled app (`npm run build`)
// on an empty in-memory database: the same document the server serves at /v1/openapi.json.
// PUBLIC_URL (or HOST, PORT and TLS) sets its `servers` entry, as for the server.
import { buildApp } from '../dist/app.js';
import { loadConfig } from '../dist/config.js';
import { openDb } from '../dist/storage/db.js';

const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' }, { listening: false });
const db = openDb('sqlite::memory:');
const app = await buildApp({ config, db, logger: false });
await app.ready();
process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`);
await app.close();
await db.close();
