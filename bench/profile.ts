// `npm run bench:profile -- ROUTE|WRITE [sqlite|postgres] [--webhook]`: a CPU profile of the server under 50
// connections on one GET route (with an API key of the benchmark's base account) or on one of
// the benchmark's write scenarios (WRITE: create_or_update, activities or purchases, every request
// a new body), summarised by where the time went (our code, Fastify, Kysely, the pg client,
// Node's core, idle), for the serving thread and the job thread, with the CPU the PostgreSQL
// processes used meanwhile. `--webhook` adds an endpoint subscribed to every event, pointing at a
// receiver in this process. The profiles (.cpuprofile, for Chrome DevTools) are kept in
// bench/.profiles/.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { receiver } from './limits/webhooks.js';
import { ROOT, startService } from './processes.js';
import { prepare, writeScenarios } from './write-scenarios.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a sample's own time belongs. */
function category(functionName: string, url: string): string {
  if (url.includes('/node_modules/pg')) return 'pg client';
  if (url.includes('/node_modules/kysely/')) return 'kysely';
  if (url.includes('/node_modules/better-sqlite3/')) return 'better-sqlite3';
  if (/\/node_modules\/(fastify|@fastify|find-my-way|avvio|light-my-request)/.test(url)) return 'fastify';
  if (url.includes('/dist/')) return 'our code';
  if (url.startsWith('node:')) return 'node core (js)';
  if (url) return 'other packages';
  if (functionName === '(idle)') return 'idle (waiting for I/O)';
  if (functionName === '(garbage collector)') return 'garbage collector';
  return `native: ${functionName || '(anonymous)'}`;
}

function summarise(file: string): [string, number][] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const time = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id);
    const delta = profile.timeDeltas[i] ?? 0;
    const key = frame ? category(frame.functionName, frame.url) : 'unknown';
    time.set(key, (time.get(key) ?? 0) + delta);
    total += delta;
  });
  return [...time].map(([key, t]) => [key, t / total] as [string, number]).sort((a, b) => b[1] - a[1]);
}

/** CPU seconds used so far by every postgres process on this machine (0 when there are none). */
function postgresCpuSeconds(): number {
  let pids: string[] = [];
  try {
    pids = execFileSync('pgrep', ['-x', 'postgres']).toString().trim().split('\n');
  } catch {
    return 0;
  }
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks / 100;
}

async function main(): Promise<void> {
  const [route = '/v1/earning_rules?limit=50', engine = 'postgres'] = process.argv.slice(2);
  const dataDir = join(ROOT, 'bench', '.profiles');
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const write = route.startsWith('/') ? undefined : route;
  let target: (base: string) => autocannon.Options;
  const prepared = await prepare(engine as 'sqlite' | 'postgres', dataDir, () => {});
  const url = prepared.url;
  if (write === undefined) {
    const key = prepared.setup.account.apiKey;
    target = (base) => ({ url: `${base}${route}`, headers: { authorization: `Bearer ${key}` } });
  } else {
    const scenario = writeScenarios(prepared.setup).find((s) => s.name.startsWith(write));
    if (!scenario) throw new Error(`no write scenario named ${write}: create_or_update, activities or purchases`);
    let n = 0;
    target = (base) => ({
      url: `${base}${scenario.path}`,
      method: 'POST',
      headers: { authorization: `Bearer ${scenario.token}`, 'content-type': 'application/json' },
      requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify(scenario.body(n, `p-${n++}`)) }) }],
    });
  }
  const webhook = process.argv.includes('--webhook');
  const server = await startService(
    url,
    1,
    ['--cpu-prof', `--cpu-prof-dir=${dataDir}`],
    webhook ? { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } : {},
  );
  const hooks = webhook ? await receiver() : null;
  if (hooks) {
    const token = target(server.url).headers?.authorization ?? '';
    const created = await fetch(`${server.url}/v1/webhook_endpoints`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/json' },
      body: JSON.stringify({ webhook_endpoint: { url: hooks.url, enabled_events: ['*'] } }),
    });
    if (created.status !== 201) throw new Error(`creating the endpoint answered ${created.status}`);
  }
  const options = { ...target(server.url), connections: 50 };
  await autocannon({ ...options, duration: 2 });
  const cpuBefore = postgresCpuSeconds();
  const result = await autocannon({ ...options, duration: DURATION });
  const postgresCpu = Math.max(0, postgresCpuSeconds() - cpuBefore);
  await server.stop(); // the profile is written as the process exits
  if (hooks) {
    console.log(`webhook deliveries received: ${hooks.count()}`);
    await hooks.close();
  }

  // One profile per thread, in the order they started: the serving thread's, then the job thread's.
  const files = readdirSync(dataDir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort();
  if (files.length === 0) throw new Error('the server wrote no profile');
  console.log(
    `${engine} ${route}: ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms; ` +
      `PostgreSQL processes: ${postgresCpu.toFixed(1)} CPU-s in ${DURATION} s ` +
      `(${((postgresCpu * 1e6) / Math.max(1, result.requests.total)).toFixed(0)} µs per request)`,
  );
  files.forEach((file, i) => {
    console.log(i === 0 ? 'the serving thread:' : 'the job thread (deliveries, upkeep):');
    for (const [key, share] of summarise(join(dataDir, file))) {
      if (share >= 0.005) console.log(`  ${(share * 100).toFixed(1).padStart(5)} %  ${key}`);
    }
    console.log(`  profile: ${join(dataDir, file)}`);
  });
}

await main();
