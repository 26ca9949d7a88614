import { execFile } from 'node:child_process';
import { Command, CommanderError } from 'commander';
import { expect } from 'vitest';
import { ROOT } from './server-process.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON value `--json` promises. */
  json<T = any>(): T;
}

/** Runs the real `loyalty` command (bin/loyalty.js over the built dist/) as a subprocess. */
export function loyalty(args: string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [`${ROOT}bin/loyalty.js`, ...args],
      { env: { PATH: process.env.PATH ?? '', ...env }, cwd: env.CWD ?? ROOT, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

let programs: Promise<() => Command> | undefined;

/**
 * The `loyalty` program of src/cli/main.ts. That module parses process.argv when it is first
 * imported; that one parse is skipped here, so that only the calls of `loyaltyInProcess` run.
 */
function programFactory(): Promise<() => Command> {
  programs ??= (async () => {
    const parseAsync = Command.prototype.parseAsync;
    Command.prototype.parseAsync = async function (this: Command) {
      return this;
    };
    try {
      return (await import('../../src/cli/main.js')).buildProgram;
    } finally {
      Command.prototype.parseAsync = parseAsync;
    }
  })();
  return programs;
}

/**
 * Runs `loyalty` in this process: the same program, commands and services as the subprocess
 * `loyalty` runs, with the environment replaced by `env` (and PATH) for the duration, and stdout,
 * stderr and the exit code captured. It spares the ~0.5 s a process spends loading its modules,
 * so most CLI tests use it; a few in each file run the real process. Commands that read stdin
 * (`--file -`, `users create`) need the real process.
 */
export async function loyaltyInProcess(args: string[], env: Record<string, string>): Promise<CliResult> {
  // Without DATABASE_URL the command would use ./data in this checkout; a subprocess can be given a CWD.
  if (!env.DATABASE_URL || env.CWD) throw new Error('loyaltyInProcess needs DATABASE_URL and no CWD');
  // process.env, stdout and the exit code are the process's own: one command at a time.
  if (inProcessRunning) throw new Error('loyaltyInProcess runs one command at a time; await the previous one');
  inProcessRunning = true;
  try {
    return await runInProcess(args, env);
  } finally {
    inProcessRunning = false;
  }
}

let inProcessRunning = false;

async function runInProcess(args: string[], env: Record<string, string>): Promise<CliResult> {
  const program = (await programFactory())();
  // Commander would call process.exit on a usage error or --help: it throws instead.
  const throwInsteadOfExit = (command: Command): void => {
    command.exitOverride();
    for (const sub of command.commands) throwInsteadOfExit(sub);
  };
  throwInsteadOfExit(program);

  const out: string[] = [];
  const err: string[] = [];
  const saved = { env: process.env, exitCode: process.exitCode, out: process.stdout.write, err: process.stderr.write };
  const capture =
    (into: string[]) =>
    (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
      into.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
      const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    };
  process.env = { PATH: saved.env.PATH ?? '', ...env };
  process.exitCode = undefined;
  process.stdout.write = capture(out) as typeof process.stdout.write;
  process.stderr.write = capture(err) as typeof process.stderr.write;
  let code: number;
  try {
    await program.parseAsync(args, { from: 'user' });
    code = Number(process.exitCode ?? 0);
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    code = error.exitCode;
  } finally {
    process.stdout.write = saved.out;
    process.stderr.write = saved.err;
    process.env = saved.env;
    process.exitCode = saved.exitCode;
  }
  const stdout = out.join('');
  return { code, stdout, stderr: err.join(''), json: () => JSON.parse(stdout) };
}

/**
 * The two checks of a CLI test, on the environment `env()` gives at call time: `ok` runs the
 * command with --json and expects success (its one JSON value), `fails` expects exit 1 with one
 * JSON error on stderr (the error object). In this process unless `cli` says otherwise.
 */
export function cliChecks(env: () => Record<string, string>) {
  return {
    ok: async (args: string[], cli: typeof loyalty = loyaltyInProcess) => {
      const result = await cli([...args, '--json'], env());
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      return result.json();
    },
    fails: async (args: string[], cli: typeof loyalty = loyaltyInProcess) => {
      const result = await cli([...args, '--json'], env());
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      return JSON.parse(result.stderr).error;
    },
  };
}
