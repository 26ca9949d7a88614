// The processes of the benchmarks: the service under test (started as `npm start` would, with
// the benchmark's settings), the peers, and the databases they run on.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface Server {
  url: string;
  pids: () => number[];
  stop(): Promise<void>;
}

/** Starts a process and resolves once it has printed `ready` `count` times. */
export function startProcess(
  command: string[],
  env: Record<string, string>,
  ready: RegExp,
  count = 1,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, command, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command.join(' ')} did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const matches = [...output.matchAll(new RegExp(ready, 'g'))];
      if (matches.length >= count) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve({ child, port: Number(matches[0]?.[1]) });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${command.join(' ')} exited with ${code}:\n${output}`));
    });
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function childPids(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    return [pid, ...children];
  } catch {
    return [pid];
  }
}

/** Peak resident memory (VmHWM) of a process, in MiB. */
export function peakRssMiB(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Starts the built service (`dist/server.js` of `root`, this checkout unless another is named) on
 * a free port with `workers` processes, rate limiting off and no log line per request;
 * `nodeOptions` go to Node (`--cpu-prof`, …), `env` adds settings. Resolves once every worker runs
 * and the port answers.
 */
export async function startService(
  databaseUrl: string,
  workers: number,
  nodeOptions: string[] = [],
  env: Record<string, string> = {},
  root = ROOT,
): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeOptions, 'dist/server.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl,
      WORKERS: String(workers),
      RATE_LIMIT_PER_SECOND: '0',
      AUTH_FAILURES_PER_MINUTE: '0',
      // The same level as the read ceilings: no line per request.
      LOG_LEVEL: 'warn',
      PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error('the server did not start in 60 s');
    const processes = childPids(child.pid ?? 0).length;
    const answers = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (answers && processes >= (workers > 1 ? workers + 1 : 1)) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (workers > 1) await new Promise((resolve) => setTimeout(resolve, 1000));
  return { url, pids: () => childPids(child.pid ?? 0), stop: () => stopChild(child) };
}

/** Whether the benchmark's PostgreSQL answers at PG_URL. */
export async function postgresAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL });
  const reachable = await client.connect().then(
    () => true,
    () => false,
  );
  await client.end().catch(() => undefined);
  return reachable;
}

/** A new, empty schema `schema` (dropped first if it exists) in the benchmark's PostgreSQL; its URL. */
export async function freshPostgresSchema(schema: string): Promise<string> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`drop schema if exists ${schema} cascade`);
  await client.query(`create schema ${schema}`);
  await client.end();
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}
