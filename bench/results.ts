/** What a benchmark run measured: the rows that bench/run.ts produces and bench/report.ts writes. */

export type Engine = 'sqlite' | 'postgres';

export interface Figures {
  rps: number;
  /** Requests answered in the run. */
  requests: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export interface Row extends Omit<Figures, 'requests'> {
  name: string;
  runs: number[];
  /** PostgreSQL's own counters over the measured runs, per request (the scale scenarios). */
  database?: DatabaseWork;
}

/** What PostgreSQL did per request: WAL written, full-page images, blocks read, HOT updates. */
export interface DatabaseWork {
  walBytes: number;
  fullPageImages: number;
  blocksRead: number;
  blocksHit: number;
  /** Share of row updates that stayed on their page without new index entries. */
  hotShare: number;
}

export interface EngineResult {
  engine: Engine;
  workers: Record<number, { rows: Row[]; memory: number[] }>;
  scale?: Row[];
  fixedRate?: Row[];
}

/** The median of a run's figures (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
