// The programs `npm run bench` runs besides Node's packages. It installs none of them: before it
// starts, it names the Debian package of each one missing, so that a run does not stop halfway.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** wrk, the load generator (Debian's `wrk`). */
export const WRK = '/usr/bin/wrk';

/** pgbench answers: Debian's /usr/bin/pgbench is a wrapper that exists without the program itself. */
function pgbenchRuns(): boolean {
  try {
    execFileSync('pgbench', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A readable line for each program the run needs and this machine lacks (none: all there).
 * pgbench is needed only when the run measures PostgreSQL.
 */
export function missingTools(postgres: boolean): string[] {
  const missing: string[] = [];
  if (!existsSync(WRK))
    missing.push(
      `wrk, the load generator, is missing (${WRK}): install Debian's package \`wrk\` (as root: apt-get install wrk), then run again`,
    );
  if (postgres && !pgbenchRuns())
    missing.push(
      "pgbench, PostgreSQL's write ceiling, is missing: install Debian's package `postgresql` (pgbench comes with " +
        'the server, postgresql-15 on Debian 12), then run again; or leave PostgreSQL out with BENCH_ENGINES=sqlite',
    );
  return missing;
}
