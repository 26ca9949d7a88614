// The read ceilings of `npm run bench`, one process each (MODE):
// - `node`: bare node:http sending the page's bytes;
// - `fastify-string`: Fastify sending the page as a pre-serialised string with the service's
//   headers (HEADERS_FILE: the headers of a real answer; a new x-request-id each time);
// - `fastify-string-batched`: the same, its answers written together at the end of each turn of
//   the event loop, as the service writes its own (src/http/send-batching.ts);
// - `fastify-object`: Fastify serialising the page object with the route's response schema.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import { EarningRulesPage } from '../src/earning-rules/schemas.js';
import { registerSendBatching } from '../src/http/send-batching.js';

const text = readFileSync(process.env.PAGE_FILE as string, 'utf8');
const headers = JSON.parse(readFileSync(process.env.HEADERS_FILE as string, 'utf8')) as Record<string, string>;
const port = Number(process.env.PORT ?? 0);
const ready = (address: unknown) => process.stdout.write(`listening ${(address as { port: number }).port}\n`);

if (process.env.MODE === 'node') {
  const bytes = Buffer.from(text);
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': bytes.length });
    response.end(bytes);
  });
  server.listen(port, '127.0.0.1', () => ready(server.address()));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
} else {
  const app = Fastify({ logger: { level: 'warn' } }).withTypeProvider<TypeBoxTypeProvider>();
  if (process.env.MODE === 'fastify-string-batched') registerSendBatching(app);
  if (process.env.MODE?.startsWith('fastify-string')) {
    app.get('/v1/earning_rules', async (_request, reply) =>
      reply.headers({ ...headers, 'x-request-id': randomUUID() }).send(text),
    );
  } else {
    const page = JSON.parse(text);
    app.get('/v1/earning_rules', { schema: { response: { 200: EarningRulesPage } } }, async () => page);
  }
  await app.listen({ host: '127.0.0.1', port });
  ready(app.server.address());
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}
