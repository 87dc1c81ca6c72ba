/**
 * bench/score: POST /v1/scoring/score on the real server (validated, authenticated, durably logged), on
 * SQLite and on PostgreSQL, against baselines returning the same JSON — bare node:http, bare Express 5 with
 * `express.json()`, Fastify 5 validating the body against a schema, Express 5 with express-openapi-validator
 * on the bundled contract (the stack the server is built on, issue 29's floor: as published, and with this
 * checkout's patch) — and the Prism mock, alternated over
 * several rounds in one run (even rounds in the reverse order, each target started once the machine is idle,
 * so no target pays for the background work of the one before it). Prints requests/s, p50/p99, each target's ratio to bare node:http,
 * to bare Express and to both validator stacks, and each server's cold start (spawn to its first 200 from
 * /readyz, on a fresh database).
 *
 * `--compare <other build's apps/server/dist/main.js>` adds that build as a target on each database, to
 * compare two versions of the server in one run (its targets are named `… (before)`). `--tracing` adds
 * the server with OpenTelemetry tracing on (every request sampled, spans exported over OTLP/HTTP to a
 * receiver in this process that answers 200 and keeps nothing), named `… (tracing on)`.
 * `--node-options="<flags>"` (with `=`: the flags start with `--`) adds the server started with that
 * NODE_OPTIONS (e.g. docs/operating.md's heap flags), named `… (NODE_OPTIONS)`.
 * `--varied` sends every target the contexts the runs benches send (`benchContext`: four jurisdictions, one
 * context in ten thin, which the policies escalate) instead of one full context, so the server raises
 * `policy.escalated` as a lender's traffic does (written only for a tenant with a webhook taking it: the
 * bench's tenant has none).
 *
 *   npm run bench:score -- [--rounds 2] [--duration 3] [--connections 50] [--db both|sqlite|postgres] [--no-prism] [--compare <main.js>] [--tracing]
 *     [--node-options="<flags>"] [--varied]
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { scoreAndLog } from '@scenario-scoring/engine';
import { freePort, prismCli } from '@scenario-scoring/testkit';
import { benchArgs } from '../lib/bench-args.ts';
import { benchItemContext } from '../lib/bench-inputs.ts';
import { type BenchServer, startBenchServer } from '../lib/bench-server.ts';
import { type RunningProcess, startProcess } from '../lib/child-process.ts';
import {
  type LoadTarget,
  measure,
  pairedRatios,
  printSummary,
  type Round,
  roundOrder,
  settle,
} from '../lib/load-report.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    rounds: { type: 'string', default: '2' },
    duration: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    db: { type: 'string', default: 'both' },
    'no-prism': { type: 'boolean', default: false },
    compare: { type: 'string' },
    tracing: { type: 'boolean', default: false },
    'node-options': { type: 'string' },
    varied: { type: 'boolean', default: false },
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
const requestBody = args.varied
  ? (n: number) => JSON.stringify({ subject: `bench-${n}`, context: benchItemContext(n) })
  : (n: number) => JSON.stringify({ subject: `bench-${n}`, context });

// The JSON the real server returns for this input, so the baseline sends the same bytes.
const sample = scoreAndLog('bench-0', context, {
  identity: { kind: 'score', request_id: 'req_01JZ4V8Q6Y3M2N5P7R9S1T3V5X' },
  scored_at: new Date().toISOString(),
  salt: 'A'.repeat(43),
});
const sameJson = JSON.stringify({
  id: 'req_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
  status: 'ok',
  result: sample.result,
  log_cid: sample.logCid,
});

/**
 * express-openapi-validator as published: a copy of the installed package (under node_modules, so it
 * finds the same dependencies: Ajv among them, whose own patch changes only the start) with this checkout's
 * patch taken out (`patch -R`, never asking). Made once per installed version and patch, as its marker says.
 */
function stockValidator(): string {
  const installed = join(ROOT, 'node_modules/express-openapi-validator');
  const { version } = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
    version: string;
  };
  const patchFile = join(ROOT, `patches/express-openapi-validator+${version}.patch`);
  const patch = readFileSync(patchFile);
  const stamp = `${version} ${createHash('sha256').update(patch).digest('hex')}\n`;
  const dir = join(ROOT, 'node_modules/.bench-stock/node_modules/express-openapi-validator');
  const marker = join(dir, '.stock');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === stamp) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  cpSync(installed, dir, { recursive: true });
  execFileSync('patch', ['-R', '-p3', '-s', '--batch', '-d', dir, '-i', patchFile]);
  writeFileSync(marker, stamp);
  return dir;
}

const databases = args.db === 'both' ? ['sqlite', 'postgres'] : [args.db];
/** With --tracing: where the traced servers send their spans (a sink: 200, nothing kept). */
let otlpSink: { url: string; close(): void } | undefined;
if (args.tracing) {
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  otlpSink = {
    url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
    close: () => sink.close(),
  };
}
const servers: { db: string; server: BenchServer; name: string }[] = [];
const processes: RunningProcess[] = [];
try {
  for (const db of databases) {
    servers.push({ db, name: `server (${db})`, server: await startBenchServer(db, 'bench') });
    if (args.compare !== undefined) {
      const before = await startBenchServer(db, 'bench-before', {}, args.compare);
      servers.push({ db, name: `server (${db}, before)`, server: before });
    }
    if (otlpSink !== undefined) {
      const traced = await startBenchServer(db, 'bench-traced', {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlpSink.url,
        OTEL_SERVICE_NAME: 'bench',
      });
      servers.push({ db, name: `server (${db}, tracing on)`, server: traced });
    }
    if (args['node-options'] !== undefined) {
      const flagged = await startBenchServer(db, 'bench-flags', { NODE_OPTIONS: args['node-options'] });
      servers.push({ db, name: `server (${db}, NODE_OPTIONS)`, server: flagged });
    }
  }
  const { headers } = servers[0]?.server ?? { headers: {} };
  const baseline = async (file: string, env: NodeJS.ProcessEnv = {}) => {
    const port = await freePort();
    const started = await startProcess([join(ROOT, 'bench/lib', file)], {
      env: { ...env, PORT: String(port), BARE_BODY: sameJson },
      url: `http://127.0.0.1:${port}`,
      readyPath: '/readyz',
    });
    processes.push(started);
    return started;
  };
  /** A baseline as a load target: the score request, with the server's headers (a baseline ignores them). */
  const target = (name: string, started: RunningProcess): LoadTarget => ({
    name,
    url: `${started.url}/v1/scoring/score`,
    headers,
    body: requestBody,
    pid: started.pid,
  });
  const targets: LoadTarget[] = [
    target('bare node:http', await baseline('bare-server.ts')),
    target('bare express+json', await baseline('bare-express.ts')),
    target('fastify+schema', await baseline('bare-fastify.ts')),
    target(
      'express+validator (stock)',
      await baseline('express-validator.ts', { VALIDATOR_DIR: stockValidator() }),
    ),
    target('express+validator (patched)', await baseline('express-validator.ts')),
    ...servers.map(({ name, server }) => ({
      name,
      url: `${server.url}/v1/scoring/score`,
      headers: server.headers,
      body: requestBody,
      pid: server.process.pid,
    })),
  ];
  if (!args['no-prism']) {
    const prismPort = await freePort();
    const prism = await startProcess(
      [prismCli(), 'mock', '--host', '127.0.0.1', '--port', String(prismPort), BUNDLE],
      { url: `http://127.0.0.1:${prismPort}`, readyPath: '/healthz', timeoutMs: 60_000 },
    );
    processes.push(prism);
    targets.push({ name: 'prism mock', url: `${prism.url}/v1/scoring/score`, headers, body: requestBody });
  }
  console.log(
    `bench/score: ${ROUNDS} rounds × ${targets.length} targets × ${DURATION_S} s, ${CONNECTIONS} connections, ${args.varied ? 'varied contexts (--varied)' : 'one context'}, Node ${process.version}`,
  );
  for (const target of targets) await measure(target, CONNECTIONS, 1); // warm-up, not reported
  const rounds: Round[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of roundOrder(targets, round)) {
      await settle();
      const r = await measure(target, CONNECTIONS, DURATION_S);
      rounds.push(r);
      console.log(
        `round ${round} ${r.target.padEnd(26)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.errors}  non-2xx ${r.non2xx}${r.cpuUs === undefined ? '' : `  CPU ${Math.round(r.cpuUs)} µs/req (main thread ${Math.round(r.mainThreadUs ?? 0)})`}`,
      );
    }
  }
  printSummary(rounds, [
    'bare node:http',
    'bare express+json',
    'express+validator (stock)',
    'express+validator (patched)',
  ]);
  if (args.compare !== undefined) {
    for (const db of databases) {
      const paired = pairedRatios(rounds, `server (${db})`, `server (${db}, before)`);
      if (paired === undefined) continue;
      console.log(
        `server (${db}) ÷ before, paired by round: median ${paired.median.toFixed(3)} (quartiles ${paired.q1.toFixed(3)}-${paired.q3.toFixed(3)}; rounds ${paired.ratios.map((r) => r.toFixed(2)).join(' ')})`,
      );
    }
  }
  for (const { name, server } of servers) {
    console.log(`${name}: cold start to ready ${Math.round(server.process.readyMs)} ms (goal ≤ 1000)`);
  }
} finally {
  for (const p of processes) await p.stop();
  for (const { server } of servers) await server.stop();
  otlpSink?.close();
}
