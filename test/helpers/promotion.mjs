// Run by test/http/send-batching.test.ts as a process of its own (`node promotion.mjs`), on the
// built app (dist/, as `npm test` builds it) and the database of DATABASE_URL (migrated): builds
// the app, listens, reads the page of 50 earning rules over keep-alive sockets in bursts of 50,
// and prints as JSON how many bytes per request the young collections moved to the old generation
// meanwhile (v8's GCProfiler). A process of its own: in vitest's workers, something of the
// runner's now and then keeps every request's objects alive past two young collections, whatever
// the app does.
import { Agent, get } from 'node:http';
import { GCProfiler } from 'node:v8';

const BURST = 50;
const WARMUP_ROUNDS = 30;
const ROUNDS = 60;
const dist = new URL('../../dist/', import.meta.url);
const { buildApp } = await import(new URL('app.js', dist).href);
const { loadConfig } = await import(new URL('config.js', dist).href);
const { openDb } = await import(new URL('storage/db.js', dist).href);

const url = process.env.DATABASE_URL ?? '';
const db = openDb(url, {});
const config = loadConfig({ DATABASE_URL: url, RATE_LIMIT_PER_SECOND: '0', LOG_LEVEL: 'silent' });
const app = await buildApp({ config, db, logger: false });
await app.ready();
const account = await app.services.accounts.create('Promotion');
await app.services.earningRules.create(
  account.id,
  Array.from({ length: 50 }, (_, i) => ({
    name: `Rule ${i}`,
    image_url: `https://cdn.example.com/earning/${i}.svg`,
    reward: { type: 'points' },
    reward_value: { type: 'fixed', fixed: { value: 50 } },
  })),
);
const { key } = await app.services.auth.createApiKey(account.id);
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address();
const agent = new Agent({ keepAlive: true, maxSockets: BURST });

/** One GET of the page; resolves with its status once the whole answer is read. */
const read = () =>
  new Promise((resolve, reject) => {
    const request = get(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/earning_rules?limit=50',
        agent,
        headers: { authorization: `Bearer ${key}` },
      },
      (response) => {
        response.resume();
        response.once('end', () => resolve(response.statusCode));
      },
    );
    request.once('error', reject);
  });
const burst = async () => {
  const statuses = await Promise.all(Array.from({ length: BURST }, read));
  const failed = statuses.find((status) => status !== 200);
  if (failed !== undefined) throw new Error(`the page answered ${failed}`);
};

for (let round = 0; round < WARMUP_ROUNDS; round++) await burst();
const profiler = new GCProfiler();
profiler.start();
for (let round = 0; round < ROUNDS; round++) await burst();
const { statistics } = profiler.stop();
const oldSpace = (spaces) => spaces.find((space) => space.spaceName === 'old_space')?.spaceUsedSize ?? 0;
let promoted = 0;
let scavenges = 0;
for (const gc of statistics) {
  if (gc.gcType !== 'Scavenge') continue;
  scavenges++;
  promoted += oldSpace(gc.afterGC.heapSpaceStatistics) - oldSpace(gc.beforeGC.heapSpaceStatistics);
}
agent.destroy();
await app.close();
await db.close();
process.stdout.write(`${JSON.stringify({ promotedPerRequest: promoted / (ROUNDS * BURST), scavenges })}\n`);
