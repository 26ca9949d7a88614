// The ceiling: the same Fastify stack (TypeBox type provider, the same response schema, the same
// logger level) answering GET /v1/earning_rules with the same 50-rule page from memory: no
// storage, no auth. Whatever the real service spends beyond this is its own work.
import { readFileSync } from 'node:fs';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import { EarningRulesPage } from '../src/earning-rules/schemas.js';

const page = JSON.parse(readFileSync(process.env.PAGE_FILE as string, 'utf8'));
const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'warn' } }).withTypeProvider<TypeBoxTypeProvider>();
app.get('/v1/earning_rules', { schema: { response: { 200: EarningRulesPage } } }, async () => page);
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.stdout.write(`listening ${(app.server.address() as { port: number }).port}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
