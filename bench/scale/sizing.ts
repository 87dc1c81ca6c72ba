/**
 * The sizing table of docs/scaling.md, computed from a bench:scale result file (docs/scale-result.json), so
 * the guide cannot drift from what was measured: `npm run bench:scale -- --sizing --out <file>` prints it,
 * and bench/scale/sizing.test.ts checks the table in docs/scaling.md equals it.
 *
 * The model (each figure from the result at the largest N measured on that database):
 * - one instance's capacity is what its main thread (the event loop, which every scoring passes through)
 *   sustains at PLANNED_UTILIZATION: 0.7 × 10⁶ / (main-thread µs per scoring) scorings/s;
 * - on PostgreSQL, instances = max(2, ⌈load / capacity⌉) (two for availability), and the server's cores are
 *   load × (process CPU µs per scoring, all threads) / 10⁶ / PLANNED_UTILIZATION; PostgreSQL's cores
 *   likewise from its backends' CPU µs per scoring (the background writer, WAL writer and checkpointer
 *   are not in that figure);
 * - on SQLite, one instance (one database file, one writer): the load either fits its capacity or does not;
 * - disk per day is load × bytes per record × 86,400, the bytes per record being those of the fill (N records
 *   through the storage path, a large sample) where N > 0, else those of the load (a few thousand scorings,
 *   whose SQLite WAL growth makes it coarse); and one tenant's scorings/s is bounded by what one
 *   sequencer appends: PLANNED_UTILIZATION × its leaves/s.
 */
import { readFileSync } from 'node:fs';

/** What bench:scale measured at one size on one database. */
export interface SizeResult {
  db: string;
  records: number;
  fillSeconds: number;
  fillInsertPerSecond: number;
  sequencerLeavesPerSecond: number;
  bytesPerRecordFilled: number | null;
  readyMs: number;
  scoringRps: number;
  scoringP99Ms: number;
  scoringErrors: number;
  serverCpuUsPerScoring: number | null;
  serverMainThreadUsPerScoring: number | null;
  scoringsMeasured: number;
  bytesPerScoring: number;
  postgres?: {
    backendCpuUsPerScoring: number;
    commitsPerScoring: number;
    rowsWrittenPerScoring: number;
    statementsPerScoring: number | null;
    /** WAL bytes and full-page images per scoring (pg_stat_wal, server-wide); absent from older results. */
    walBytesPerScoring?: number;
    walFullPageImagesPerScoring?: number;
  };
  commitToCheckpointP50Ms: number;
  commitToCheckpointP99Ms: number;
  inclusionProofP99Ms: number;
  consistencyProofP99Ms: number;
  runItemsPerSecond: number;
  runServerCpuUsPerItem: number;
}

/** A bench:scale result file. */
export interface ScaleResult {
  measuredAt: string;
  node: string;
  options: { sizes: number[]; duration: number; connections: number };
  results: SizeResult[];
}

/** The share of a resource a plan fills, leaving headroom for bursts and for the machine's other work. */
export const PLANNED_UTILIZATION = 0.7;
/** The loads the guide sizes for, in scorings/s. */
export const LOADS = [100, 1000, 10_000];

/** The result at the largest N measured on `db`, or undefined. */
function largest(result: ScaleResult, db: string): SizeResult | undefined {
  return result.results.filter((r) => r.db === db).sort((a, b) => b.records - a.records)[0];
}

/** Bytes on disk a scoring adds: the fill's figure where there was a fill, else the load's. */
export function bytesPerRecord(r: SizeResult): number {
  return r.bytesPerRecordFilled ?? r.bytesPerScoring;
}

const cores = (load: number, us: number) => (load * us) / 1e6 / PLANNED_UTILIZATION;
const oneDecimal = (value: number) => (value < 10 ? value.toFixed(1) : Math.ceil(value).toString());
const grouped = (value: number) => Math.round(value).toLocaleString('en-US');

/** The markdown table of docs/scaling.md (between its sizing-table markers), from `result`. */
export function sizingTable(result: ScaleResult): string {
  const lines = [
    '| Load (scorings/s) | Database | Instances | Server cores | PostgreSQL cores | Disk per day | Per-tenant ceiling (one sequencer) |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const load of LOADS) {
    for (const db of ['sqlite', 'postgres']) {
      const r = largest(result, db);
      if (!r || r.serverMainThreadUsPerScoring === null || r.serverCpuUsPerScoring === null) continue;
      const capacity = (PLANNED_UTILIZATION * 1e6) / r.serverMainThreadUsPerScoring;
      const needed = Math.ceil(load / capacity);
      const instances =
        db === 'sqlite'
          ? needed <= 1
            ? '1'
            : `does not fit (1 instance ≈ ${grouped(capacity)}/s)`
          : String(Math.max(2, needed));
      const pgCores = r.postgres ? oneDecimal(cores(load, r.postgres.backendCpuUsPerScoring)) : '–';
      const disk = `${((load * bytesPerRecord(r) * 86_400) / 1e9).toFixed(1)} GB`;
      const ceiling = `${grouped(PLANNED_UTILIZATION * r.sequencerLeavesPerSecond)}/s`;
      lines.push(
        `| ${grouped(load)} | ${db === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${instances} | ${oneDecimal(cores(load, r.serverCpuUsPerScoring))} | ${pgCores} | ${disk} | ${ceiling} |`,
      );
    }
  }
  return lines.join('\n');
}

/** The per-request costs the table is computed from, as a markdown table. */
export function costTable(result: ScaleResult): string {
  const lines = [
    '| Database | N records | Server CPU µs/scoring (main thread) | PostgreSQL backend CPU µs/scoring | Commits / rows written per scoring | Bytes/scoring (load) | Bytes/record (fill) | Server CPU µs/run item | Sequencer leaves/s |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const db of ['sqlite', 'postgres']) {
    const r = largest(result, db);
    if (!r) continue;
    lines.push(
      `| ${db === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${grouped(r.records)} | ${grouped(r.serverCpuUsPerScoring ?? Number.NaN)} (${grouped(r.serverMainThreadUsPerScoring ?? Number.NaN)}) | ${r.postgres ? grouped(r.postgres.backendCpuUsPerScoring) : '–'} | ${r.postgres ? `${r.postgres.commitsPerScoring.toFixed(2)} / ${r.postgres.rowsWrittenPerScoring.toFixed(1)}` : '–'} | ${grouped(r.bytesPerScoring)} | ${r.bytesPerRecordFilled === null ? '–' : grouped(r.bytesPerRecordFilled)} | ${grouped(r.runServerCpuUsPerItem)} | ${grouped(r.sequencerLeavesPerSecond)} |`,
    );
  }
  return lines.join('\n');
}

/** Prints both tables computed from the result file at `path`. */
export function printSizing(path: string): void {
  const result = JSON.parse(readFileSync(path, 'utf8')) as ScaleResult;
  console.log(`${costTable(result)}\n\n${sizingTable(result)}`);
}
