import { execFile } from 'node:child_process';
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
