/**
 * bench/runs ndjson-isolation: what one tenant's NDJSON runs cost another tenant's scoring. Tenant
 * `hostile` sends `--uploads` gzip bodies of `--lines` identical lines at once (a 1,000,000-line body is
 * about 150 KB compressed), then sends them again as often as the server takes them, for `--seconds`;
 * tenant `victim` meanwhile scores at a fixed rate (`--rate` requests/s, open loop: a slow answer does
 * not slow the sending) and its latencies are reported for a quiet phase before the flood and for the
 * flood, with the hostile tenant's answers (202, 429, 413 …) counted. The baseline is the same victim in
 * the same run before the flood.
 *
 *   npm run bench:ndjson-isolation -- [--db sqlite|postgres|both] [--uploads 4] [--lines 1000000] [--seconds 40] [--rate 50]
 */

import { gzipSync } from 'node:zlib';
import { benchArgs } from '../lib/bench-args.ts';
import { type BenchServer, createApiKey, freshBenchDatabase, startServerOn } from '../lib/bench-server.ts';
import { fixedRateVictim, victimSummary } from '../lib/victim.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    db: { type: 'string', default: 'sqlite' },
    uploads: { type: 'string', default: '4' },
    lines: { type: 'string', default: '1000000' },
    seconds: { type: 'string', default: '40' },
    quiet: { type: 'string', default: '8' },
    rate: { type: 'string', default: '50' },
    windows: { type: 'string', default: '0' },
  },
});
const UPLOADS = Number(args.uploads);
const LINES = Number(args.lines);
const FLOOD_MS = Number(args.seconds) * 1000;
const QUIET_MS = Number(args.quiet) * 1000;
const RATE = Number(args.rate);

const line = `${JSON.stringify({ subject: 'flood', context: { jurisdiction: 'DE', on_time_ratio: 0.9, utilization: 0.3, history_months: 60, debt_to_income: 0.3 } })}\n`;
const body = gzipSync(Buffer.from(line.repeat(LINES)), { level: 9 });

function summary(name: string, latencies: number[], failures: number): string {
  return victimSummary(name, latencies, failures, 8);
}

function victim(server: BenchServer, key: string, until: () => boolean) {
  return fixedRateVictim(server, key, RATE, until);
}

async function bench(db: string) {
  const database = await freshBenchDatabase(db, 'bench-isolation');
  const env = { NODE_ENV: 'production', ...database.env };
  const hostileKey = createApiKey({ ...env, RATE_LIMIT_PER_SECOND: '0' }, 'hostile');
  const victimKey = createApiKey({ ...env, RATE_LIMIT_PER_SECOND: '0' }, 'victim');
  const server = await startServerOn(database, victimKey);
  try {
    const quietEnd = performance.now() + QUIET_MS;
    const quiet = await victim(server, victimKey, () => performance.now() > quietEnd);
    const floodEnd = performance.now() + FLOOD_MS;
    const answers = new Map<number, number>();
    const flooder = async () => {
      while (performance.now() < floodEnd) {
        const answer = await fetch(`${server.url}/v1/scoring/runs`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${hostileKey}`,
            'content-type': 'application/x-ndjson',
            'content-encoding': 'gzip',
          },
          body,
        }).catch(() => undefined);
        const status = answer?.status ?? 0;
        await answer?.arrayBuffer().catch(() => {});
        answers.set(status, (answers.get(status) ?? 0) + 1);
        if (status !== 202) await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    const [flood] = await Promise.all([
      victim(server, victimKey, () => performance.now() > floodEnd),
      ...Array.from({ length: UPLOADS }, flooder),
    ]);
    console.log(
      [
        `bench/runs ndjson-isolation (${db}), ${UPLOADS} uploads at once of ${LINES} lines (${body.length} bytes gzip), victim at ${RATE} req/s, Node ${process.version}:`,
        `  ${summary('quiet', quiet.latencies, quiet.failures)}`,
        `  ${summary('flood', flood.latencies, flood.failures)}`,
        `  hostile answers: ${[...answers].map(([status, count]) => `${status}×${count}`).join(', ')}`,
      ].join('\n'),
    );
    const window = Number(args.windows);
    if (window > 0)
      for (let from = 0; from < FLOOD_MS / 1000; from += window) {
        const inWindow = flood.timeline
          .filter(([at]) => at >= from && at < from + window)
          .map(([, ms]) => ms);
        console.log(`  ${summary(`${from}-${from + window}s`, inWindow, 0)}`);
      }
  } finally {
    await server.stop();
    await database.drop();
  }
}

for (const db of args.db === 'both' ? ['sqlite', 'postgres'] : [args.db as string]) await bench(db);
