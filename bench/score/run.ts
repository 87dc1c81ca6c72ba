/**
 * bench/score: POST /v1/scoring/score on the real server (validated, durably logged) against a bare
 * node:http endpoint returning the same JSON, and against the Prism mock, alternated over several rounds in
 * one run. Prints requests/s, p50/p99 and each target's ratio to bare node:http.
 *
 *   npm run bench:score -- [--rounds 3] [--duration 5] [--connections 50] [--db sqlite|postgres]
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { scoreAndLog } from '@scenario-scoring/engine';
import { freePort, prismCli } from '@scenario-scoring/testkit';
import { startBenchServer } from '../lib/bench-server.ts';
import { type RunningProcess, startProcess } from '../lib/child-process.ts';
import { type LoadTarget, measure, printSummary, type Round } from '../lib/load-report.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    db: { type: 'string', default: 'sqlite' },
  },
});
const ROUNDS = Number(args.rounds);
const DURATION_S = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const ROOT = new URL('../../', import.meta.url).pathname;
const BUNDLE = join(ROOT, 'openapi/dist/openapi.yaml');

const context = {
  jurisdiction: 'DE',
  on_time_ratio: 0.96,
  utilization: 0.35,
  history_months: 84,
  debt_to_income: 0.28,
};
const requestBody = (n: number) => JSON.stringify({ subject: `bench-${n}`, context });

// The JSON the real server returns for this input, so the baseline sends the same bytes.
const sample = scoreAndLog('bench-0', context);
const sameJson = JSON.stringify({
  id: 'req_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
  status: 'ok',
  result: sample.result,
  log_cid: sample.logCid,
});

const server = await startBenchServer(args.db, 'bench');
const processes: RunningProcess[] = [];
try {
  const { headers } = server;
  const [barePort, prismPort] = [await freePort(), await freePort()];
  const bare = await startProcess([join(ROOT, 'bench/lib/bare-server.ts')], {
    env: { PORT: String(barePort), BARE_BODY: sameJson },
    url: `http://127.0.0.1:${barePort}`,
  });
  const prism = await startProcess(
    [prismCli(), 'mock', '--host', '127.0.0.1', '--port', String(prismPort), BUNDLE],
    {
      url: `http://127.0.0.1:${prismPort}`,
      readyPath: '/healthz',
      timeoutMs: 60_000,
    },
  );
  processes.push(bare, prism);

  const targets: LoadTarget[] = [
    { name: 'bare node:http', url: `${bare.url}/v1/scoring/score`, headers, body: requestBody },
    { name: `server (${args.db})`, url: `${server.url}/v1/scoring/score`, headers, body: requestBody },
    { name: 'prism mock', url: `${prism.url}/v1/scoring/score`, headers, body: requestBody },
  ];
  console.log(
    `bench/score: ${ROUNDS} rounds × ${targets.length} targets × ${DURATION_S} s, ${CONNECTIONS} connections, Node ${process.version}`,
  );
  for (const target of targets) await measure(target, CONNECTIONS, 1); // warm-up, not reported
  const rounds: Round[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of targets) {
      const r = await measure(target, CONNECTIONS, DURATION_S);
      rounds.push(r);
      console.log(
        `round ${round} ${r.target.padEnd(18)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.errors}  non-2xx ${r.non2xx}`,
      );
    }
  }
  printSummary(rounds, 'bare node:http');
} finally {
  for (const p of processes) await p.stop();
  await server.stop();
}
