// `npm run bench:allocations -- [sqlite|postgres] [ROOT …]`: what one `GET /v1/earning_rules?limit=50`
// (a page of 50 of the account's 52 rules, as `npm run bench` reads it) costs the serving thread's
// memory: the bytes its JavaScript allocates, the bytes young collections move to the old
// generation (objects kept past two of them) and the time its collector takes, per request, with
// the process's resident memory and heap once started and after the load. ROOT is a checkout whose
// dist/ is built (this one when none is named); several are measured one after the other, each on
// data of its own seeded by its own code, so that two commits can be compared (issue 50, point 4:
// `npm run bench:allocations -- sqlite ../old-checkout .`). The server is the built one, started as
// bench/processes.ts starts it, with bench/allocation-probe.ts loaded into it. BENCH_REQUESTS
// (20,000) requests over 50 connections after a warm-up of a quarter as many; a few seconds each.
// ALLOCATION_SAMPLES=all samples the allocations meanwhile and lists the functions that allocate
// most, ALLOCATION_SAMPLES=held what they allocated that is still on the heap at the end (what was
// kept); the .heapprofile (for Chrome DevTools) stays in bench/.allocations/. ALLOCATION_NODE_ARGS
// adds options to the server's node (`--trace-gc`).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import type { Interval, Memory, ProbeAnswer, ProbeRequest } from './allocation-probe.js';
import { freePort, freshPostgresSchema, ROOT, stopChild } from './processes.js';
import { benchRule } from './seed.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const CONNECTIONS = 50;
const ROUTE = '/v1/earning_rules?limit=50';
const DATA = join(ROOT, 'bench', '.allocations');
const PROBE = fileURLToPath(new URL('./allocation-probe.js', import.meta.url));
const SAMPLES = process.env.ALLOCATION_SAMPLES === 'all' || process.env.ALLOCATION_SAMPLES === 'held';
const NODE_ARGS = process.env.ALLOCATION_NODE_ARGS?.split(' ').filter(Boolean) ?? [];

/** The modules of a checkout's build that seeding needs, loaded from that checkout. */
interface Built {
  openDb(url: string, options: object): { close(): Promise<void> };
  migrateToLatest(db: unknown): Promise<void>;
  createServices(db: unknown, options: object): Record<string, Record<string, (...args: never[]) => Promise<unknown>>>;
  ALL_SCOPES: readonly string[];
}

/**
 * Seeds `url` with the code of the checkout at `root` (run as a child process, one checkout's
 * native modules each): an account of 52 rules, as bench/seed.ts makes them. Prints its API key.
 */
async function seed(root: string, url: string): Promise<void> {
  const load = (path: string) => import(pathToFileURL(join(root, 'dist', path)).href);
  const built = {
    ...(await load('storage/db.js')),
    ...(await load('storage/migrator.js')),
    ...(await load('services.js')),
    ...(await load('auth/scopes.js')),
  } as Built;
  const db = built.openDb(url, { sqliteSynchronous: 'NORMAL', poolMax: 4 });
  try {
    await built.migrateToLatest(db);
    const services = built.createServices(db, { clock: { now: () => Date.now() }, accessTokenTtlSeconds: 86_400 });
    const call = <T>(service: string, method: string, ...args: unknown[]): Promise<T> => {
      const target = services[service];
      const run = target?.[method];
      if (!target || typeof run !== 'function') throw new Error(`this build has no ${service}.${method}`);
      return (run as (...a: unknown[]) => Promise<T>).apply(target, args);
    };
    const account = await call<{ id: number }>('accounts', 'create', 'Allocations');
    await call(
      'earningRules',
      'create',
      account.id,
      Array.from({ length: 50 }, (_, i) => benchRule(i)),
    );
    const order = await call<{ token: string }>('activityTypes', 'create', account.id, { name: 'Place an order' });
    await call('earningRules', 'create', account.id, [
      { ...benchRule(2), name: 'Order', activity_token: order.token, earning_limit: null },
      {
        ...benchRule(1),
        name: 'Order bonus',
        activity_token: order.token,
        earning_limit: { max: 3, type: 'rolling', rolling: { unit: 'day', unit_count: 1 } },
      },
    ]);
    // `auth` since the credentials service took the apps' tokens in; `credentials` before.
    const auth = services.auth ? 'auth' : 'credentials';
    const key = await call<{ key: string }>(auth, 'createApiKey', account.id, built.ALL_SCOPES);
    process.stdout.write(`${key.key}\n`);
  } finally {
    await db.close();
  }
}

interface Probed {
  child: ChildProcess;
  url: string;
  ask<T extends ProbeAnswer>(request: ProbeRequest): Promise<T>;
}

/** The built server of `root` on `databaseUrl`, as bench/processes.ts starts it, with the probe loaded. */
async function startProbed(root: string, databaseUrl: string, profile: string): Promise<Probed> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', pathToFileURL(PROBE).href, ...NODE_ARGS, 'dist/server.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl,
      WORKERS: '1',
      RATE_LIMIT_PER_SECOND: '0',
      AUTH_FAILURES_PER_MINUTE: '0',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      ...(SAMPLES ? { ALLOCATION_PROFILE: profile } : {}),
      ...(process.env.ALLOCATION_SAMPLES === 'held' ? { ALLOCATION_PROFILE_HELD: '1' } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error('the server did not start in 60 s');
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const ask = <T extends ProbeAnswer>(request: ProbeRequest) =>
    new Promise<T>((done) => {
      child.once('message', (answer) => done(answer as T));
      child.send(request);
    });
  return { child, url, ask };
}

interface Figures {
  root: string;
  commit: string;
  started: Memory;
  afterLoad: Memory;
  interval: Interval;
  requests: number;
  /** With ALLOCATION_SAMPLES: the functions that allocated most, bytes per request. */
  sites: [string, number][];
}

interface HeapProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapProfileNode[];
}

/** The sampled profile's bytes per request by allocating function (its own allocations), most first. */
function topSites(file: string, requests: number): [string, number][] {
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapProfileNode };
  const bytes = new Map<string, number>();
  const visit = (node: HeapProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url
      ? `${url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules|dist)\//, '$1/')}:${lineNumber + 1}`
      : '';
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
    for (const child of node.children) visit(child);
  };
  visit(head);
  return [...bytes]
    .map(([key, size]): [string, number] => [key, size / requests])
    .sort((a, b) => b[1] - a[1])
    .slice(0, 25);
}

async function measureRoot(root: string, engine: 'sqlite' | 'postgres', index: number): Promise<Figures> {
  const databaseUrl =
    engine === 'sqlite'
      ? `sqlite:${join(DATA, `allocations-${index}.db`)}`
      : await freshPostgresSchema(`loyalty_allocations_${index}`);
  const apiKey = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--seed', root, databaseUrl])
    .toString()
    .trim();
  const profile = join(DATA, `allocations-${index}.heapprofile`);
  const server = await startProbed(root, databaseUrl, profile);
  try {
    const page = await fetch(`${server.url}${ROUTE}`, { headers: { authorization: `Bearer ${apiKey}` } });
    if (page.status !== 200) throw new Error(`${ROUTE} answered ${page.status}`);
    await page.text();
    // Started and answered once: what the process holds before any load.
    const started = (await server.ask<{ memory: Memory }>('memory')).memory;
    const load = {
      url: `${server.url}${ROUTE}`,
      headers: { authorization: `Bearer ${apiKey}` },
      connections: CONNECTIONS,
    };
    await autocannon({ ...load, amount: Math.ceil(REQUESTS / 4) });
    await server.ask('start');
    const result = await autocannon({ ...load, amount: REQUESTS });
    const { interval } = await server.ask<{ interval: Interval }>('stop');
    const afterLoad = (await server.ask<{ memory: Memory }>('memory')).memory;
    const failed = result.non2xx + result.errors;
    if (failed > 0) throw new Error(`${failed} of the requests failed`);
    const commit = gitCommit(root);
    const requests = result.requests.total;
    const sites = SAMPLES ? topSites(profile, requests) : [];
    return { root, commit, started, afterLoad, interval, requests, sites };
  } finally {
    await stopChild(server.child);
  }
}

/** The commit checked out at `root`, or `-` for a folder that is not a git checkout. */
function gitCommit(root: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return '-';
  }
}

const MiB = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

function report(engine: string, all: Figures[]): void {
  const line = (cells: string[]) => process.stdout.write(`| ${cells.join(' | ')} |\n`);
  process.stdout.write(`\n${engine}, ${ROUTE}, ${REQUESTS} requests over ${CONNECTIONS} connections:\n\n`);
  line([
    'commit',
    'KiB allocated/req',
    'bytes promoted/req',
    'GC µs/req',
    'scavenges',
    'mark-compacts',
    'RSS MiB started → loaded',
    'heapUsed MiB started → loaded',
  ]);
  line(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']);
  for (const f of all) {
    const n = f.requests;
    line([
      `${f.commit} (${basename(f.root)})`,
      (f.interval.allocated / 1024 / n).toFixed(1),
      (f.interval.promoted / n).toFixed(0),
      (f.interval.gcUs / n).toFixed(1),
      String(f.interval.scavenges),
      String(f.interval.markCompacts),
      `${MiB(f.started.rss)} → ${MiB(f.afterLoad.rss)}`,
      `${MiB(f.started.heapUsed)} → ${MiB(f.afterLoad.heapUsed)}`,
    ]);
  }
  for (const f of all) {
    const { serving, others } = f.interval.cpuUs;
    const spaces = Object.entries(f.started.spaces)
      .filter(([, bytes]) => bytes > 0)
      .map(([name, bytes]) => `${name} ${MiB(bytes)}`)
      .join(', ');
    process.stdout.write(
      `\n${f.commit} (${f.root}):\n  CPU µs/req: serving thread ${(serving / f.requests).toFixed(1)}, ` +
        `other threads (V8's helpers, libuv's, the job thread) ${(others / f.requests).toFixed(1)}\n` +
        `  heap started, MiB: ${spaces}; ` +
        `external ${MiB(f.started.external)} (array buffers ${MiB(f.started.arrayBuffers)})\n`,
    );
    if (f.sites.length)
      process.stdout.write(`  sampled bytes/req by allocating function (${process.env.ALLOCATION_SAMPLES}):\n`);
    for (const [site, bytes] of f.sites) process.stdout.write(`    ${bytes.toFixed(0).padStart(6)}  ${site}\n`);
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--seed') return seed(args[1] ?? ROOT, args[2] ?? '');
  const engine = args.includes('postgres') ? 'postgres' : 'sqlite';
  const roots = args.filter((arg) => arg !== 'sqlite' && arg !== 'postgres').map((root) => resolve(root));
  rmSync(DATA, { recursive: true, force: true });
  mkdirSync(DATA, { recursive: true });
  const all: Figures[] = [];
  for (const [i, root] of (roots.length ? roots : [ROOT]).entries()) all.push(await measureRoot(root, engine, i));
  report(engine, all);
  if (!SAMPLES) rmSync(DATA, { recursive: true, force: true });
}

await main();
