/** How the soak reads the server's memory: RSS from /proc, the V8 heap from the server's own /metrics. */
import { readFileSync } from 'node:fs';

/** The resident set size of process `pid` in bytes. */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? Number.NaN);
  return kib * 1024;
}

/** The V8 heap in use, in bytes, from a /metrics scrape (tells a heap leak from native growth). */
export async function heapUsedBytes(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
}
