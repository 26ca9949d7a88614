// CPU accounting from /proc: what the server, PostgreSQL, the load generator and the whole
// machine used, in clock ticks.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Microseconds in one clock tick of /proc's figures. */
export const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/**
 * User + system CPU ticks of a process so far (0 once it has gone); with `reaped`, its children's
 * that have ended and been waited for too.
 */
export function cpuTicks(pid: number, reaped = false): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const own = Number(fields[11]) + Number(fields[12]);
    return reaped ? own + Number(fields[13]) + Number(fields[14]) : own;
  } catch {
    return 0;
  }
}

/** The CPU ticks of these processes so far. */
export const sumTicks = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuTicks(pid), 0);

/**
 * PostgreSQL's CPU ticks so far: every server process's, and those of the backends that have
 * ended (the postmaster waits for them), so that pgbench's connections, which come and go
 * within a run, are counted.
 */
export const postgresTicks = () => postgresPids().reduce((sum, pid) => sum + cpuTicks(pid, true), 0);

/** Every PostgreSQL server process on this machine. */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

/** The machine's busy CPU ticks and all its ticks so far (/proc/stat). */
export function machineTicks(): { busy: number; all: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const all = fields.reduce((sum, n) => sum + n, 0);
  // idle and iowait
  return { busy: all - (fields[3] ?? 0) - (fields[4] ?? 0), all };
}
