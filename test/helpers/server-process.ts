import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SERVER_ENTRY = `${ROOT}dist/server.js`;

export interface ServerProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Sends a signal and waits for the exit; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts the real server (`node dist/server.js`, built by `npm test`) on a free port and waits
 * until it logs that it is listening. `env` is the whole environment besides PATH.
 */
export async function startServer(
  env: Record<string, string> = {},
  options: { timeoutMs?: number; bare?: boolean } = {},
): Promise<ServerProcess> {
  const { CWD, ...vars } = env;
  // Generous: the suite runs its files in parallel on two cores, and a start runs the migrations.
  const timeoutMs = options.timeoutMs ?? 45_000;
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    cwd: CWD ?? ROOT,
    // `bare`: nothing but PATH, exactly as a newcomer's shell would start it.
    env: options.bare
      ? { PATH: process.env.PATH ?? '' }
      : { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...vars },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Nobody gets a handle on a server that never came up, so it is stopped here.
      child.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = () => {
      const match = /Server listening at https?:\/\/[^\s"]+:(\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        // Searching the whole output again on every later line would cost a long run's test
        // process more and more CPU (a million-row import's reads log for minutes).
        child.stdout?.off('data', onData);
        resolve(Number(match[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    child,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      // Already gone (exited, or killed by a signal): there is no 'exit' event left to wait for.
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await once(child, 'exit');
      return code as number | null;
    },
  };
}
