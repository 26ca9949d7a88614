// Loaded into the server under test by `npm run bench:allocations` (node --import): answers the
// benchmark over the IPC channel with the process's memory, and between `start` and `stop` counts
// the bytes the serving thread's JavaScript allocated, the bytes its young collections moved to the
// old generation and the time its collector held it (v8's GCProfiler), with the CPU of the serving
// thread and of the others. With ALLOCATION_PROFILE set to a file name, the allocations are also
// sampled meanwhile (every 4 KiB on average; collected objects too, unless ALLOCATION_PROFILE_HELD)
// and the profile written there (.heapprofile, for Chrome DevTools). Nothing of it runs without
// that channel.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { GCProfiler, getHeapSpaceStatistics } from 'node:v8';

/** What the benchmark asks for. */
export type ProbeRequest = 'memory' | 'start' | 'stop';

export interface Memory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** Used bytes of each of V8's heap spaces (old_space, code_space, …). */
  spaces: Record<string, number>;
}

export interface Interval {
  /** Bytes allocated on the serving thread's heap over the interval. */
  allocated: number;
  /** Bytes its young collections moved to the old generation: objects kept past two of them. */
  promoted: number;
  /** Time the collector took on the serving thread (its pauses), µs. */
  gcUs: number;
  scavenges: number;
  markCompacts: number;
  /** CPU µs over the interval: the serving thread's, and the other threads' (V8's helpers, libuv's, the job thread). */
  cpuUs: { serving: number; others: number };
}

export type ProbeAnswer = { memory: Memory } | { interval: Interval };

function memory(): Memory {
  const usage = process.memoryUsage();
  const spaces: Record<string, number> = {};
  for (const space of getHeapSpaceStatistics()) spaces[space.space_name] = space.space_used_size;
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = usage;
  return { rss, heapUsed, heapTotal, external, arrayBuffers, spaces };
}

const TICK_US = 10_000;

/** CPU µs used so far by the serving thread and by the process's other threads (all named `node`). */
function threadCpu(): { serving: number; others: number } {
  const cpu = { serving: 0, others: 0 };
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const us = (Number(fields[11]) + Number(fields[12])) * TICK_US;
      if (tid === String(process.pid)) cpu.serving += us;
      else cpu.others += us;
    } catch {
      // the thread ended meanwhile
    }
  }
  return cpu;
}

const oldSpace = (spaces: { spaceName: string; spaceUsedSize: number }[]) =>
  spaces.find((space) => space.spaceName === 'old_space')?.spaceUsedSize ?? 0;

if (process.send) {
  let profiler: GCProfiler | null = null;
  let usedAtStart = 0;
  let cpuAtStart = threadCpu();
  const sampled = process.env.ALLOCATION_PROFILE;
  const session = sampled ? new Session() : null;
  session?.connect();
  const send = (answer: ProbeAnswer) => process.send?.(answer);
  process.on('message', async (request: ProbeRequest) => {
    if (request === 'memory') return send({ memory: memory() });
    if (request === 'start') {
      await session?.post('HeapProfiler.startSampling', {
        samplingInterval: 4096,
        // ALLOCATION_PROFILE_HELD: only what is still on the heap at the end (what survived).
        includeObjectsCollectedByMajorGC: !process.env.ALLOCATION_PROFILE_HELD,
        includeObjectsCollectedByMinorGC: !process.env.ALLOCATION_PROFILE_HELD,
      });
      profiler = new GCProfiler();
      cpuAtStart = threadCpu();
      usedAtStart = process.memoryUsage().heapUsed;
      profiler.start();
      return send({ memory: memory() });
    }
    if (request === 'stop' && profiler) {
      const usedAtEnd = process.memoryUsage().heapUsed;
      const { statistics } = profiler.stop();
      if (session && sampled) {
        const { profile } = await session.post('HeapProfiler.stopSampling');
        writeFileSync(sampled, JSON.stringify(profile));
      }
      const cpu = threadCpu();
      profiler = null;
      // Between two collections the heap grows by what was allocated: the sum of each growth.
      let allocated = 0;
      let after = usedAtStart;
      let gcUs = 0;
      let promoted = 0;
      let scavenges = 0;
      let markCompacts = 0;
      for (const gc of statistics) {
        allocated += gc.beforeGC.heapStatistics.usedHeapSize - after;
        after = gc.afterGC.heapStatistics.usedHeapSize;
        gcUs += gc.cost;
        if (gc.gcType === 'Scavenge' || gc.gcType === 'MinorMarkCompact') {
          scavenges++;
          promoted += oldSpace(gc.afterGC.heapSpaceStatistics) - oldSpace(gc.beforeGC.heapSpaceStatistics);
        } else if (gc.gcType === 'MarkSweepCompact') markCompacts++;
      }
      allocated += usedAtEnd - after;
      const cpuUs = { serving: cpu.serving - cpuAtStart.serving, others: cpu.others - cpuAtStart.others };
      return send({ interval: { allocated, promoted, gcUs, scavenges, markCompacts, cpuUs } });
    }
  });
  // The channel must not keep a stopping server alive.
  process.channel?.unref();
}
