// The settings of `npm run bench`, read once from the environment (see bench/limits.ts), and the
// scratch folder every part of it writes to.
import { join } from 'node:path';
import { ROOT } from '../processes.js';

/** Seconds of each measured run. */
export const DURATION = Number(process.env.BENCH_DURATION ?? 8);
/** Measured runs per scenario and ceiling; the figures are their medians. */
export const RUNS = Number(process.env.BENCH_RUNS ?? 3);
/** Seconds of the warm-up run before each scenario and ceiling. */
export const WARMUP = 2;
/** wrk's connections, and pgbench's clients: the same concurrency on both sides of a ratio. */
export const CONNECTIONS = 50;
export const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>;
export const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean);
/** Whether a scenario (or ceiling) of this name runs: every one unless BENCH_ONLY names some. */
export const wanted = (name: string) => !ONLY || ONLY.some((part) => name.includes(part));
/** Databases, the page, bodies and scripts of one run; removed at its end. */
export const DATA = join(ROOT, 'bench', '.limits');
/** One line of the bench's progress on standard output. */
export const log = (line: string) => process.stdout.write(`${line}\n`);
