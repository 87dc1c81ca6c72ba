/**
 * The Prometheus alert rules and the Grafana dashboard of deploy/: the rules pass `promtool check rules` and
 * their unit tests (`promtool test rules`, Debian's `prometheus` package, installed by scripts/test.sh), and
 * every metric the rules and the dashboard name is one the server exports.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics/metrics.js';
import { startMetricsServer } from '../src/metrics/metrics-server.js';
import { silentLogger } from '../src/request-logging/logger.js';
import { openStorage } from '../src/storage/storage.js';
import { SERVER_DIR } from './support/built-server.js';
import { createTestDatabase, type TestDatabase } from './support/test-databases.js';
import { startTestServer } from './support/test-server.js';

const DEPLOY = join(SERVER_DIR, '..', '..', 'deploy');
const RULES = join(DEPLOY, 'prometheus', 'alerts.yml');
const RULE_TESTS = join(DEPLOY, 'prometheus', 'alerts.test.yml');
const DASHBOARD = join(DEPLOY, 'grafana', 'scenario-scoring.json');

/** promtool: PROMTOOL_PATH, or the one on PATH (Debian's `prometheus` package). */
function promtool(): string {
  const path = process.env.PROMTOOL_PATH ?? 'promtool';
  const found = spawnSync(path, ['--version'], { encoding: 'utf8' });
  if (found.error !== undefined)
    throw new Error(
      `promtool was not found (${found.error.message}): install Debian's 'prometheus' package (scripts/test.sh does, as root) or set PROMTOOL_PATH`,
    );
  return path;
}

/** promtool's exit code and output. */
function run(args: string[]): { status: number | null; output: string } {
  const result = spawnSync(promtool(), args, { encoding: 'utf8', cwd: join(DEPLOY, 'prometheus') });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** The metric names a PromQL text uses (the service's, OpenTelemetry's HTTP and Node's process ones). */
function metricNames(promql: string): Set<string> {
  return new Set(promql.match(/\b(?:scenario_scoring|http_server|process|nodejs)_[a-z0-9_]+/g) ?? []);
}

/** Every PromQL expression of the dashboard's panels and variables. */
function dashboardQueries(): string[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: { targets: { expr: string }[] }[];
    templating: { list: { query?: unknown }[] };
  };
  return [
    ...dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr)),
    ...dashboard.templating.list.map((variable) =>
      typeof variable.query === 'string' ? variable.query : '',
    ),
  ];
}

it('the alert rules pass promtool check rules', () => {
  const { status, output } = run(['check', 'rules', RULES]);
  expect(status, output).toBe(0);
  expect(output).toMatch(/SUCCESS: 7 rules found/);
});

it('the alert rules pass their promtool unit tests (each alert fires when it should, and not before)', () => {
  const { status, output } = run(['test', 'rules', RULE_TESTS]);
  expect(status, output).toBe(0);
  expect(output).toMatch(/SUCCESS/);
});

it('promtool fails a rule that does not fire as its test expects (the tests above can fail)', () => {
  const broken = readFileSync(RULES, 'utf8').replace('> 300', '> 30000');
  const copy = join(DEPLOY, 'prometheus', `.alerts-broken-${process.pid}.yml`);
  const tests = join(DEPLOY, 'prometheus', `.alerts-broken-${process.pid}.test.yml`);
  execFileSync('sh', ['-c', 'cat > "$1"', 'sh', copy], { input: broken });
  execFileSync('sh', ['-c', 'cat > "$1"', 'sh', tests], {
    input: readFileSync(RULE_TESTS, 'utf8').replace('  - alerts.yml', `  - ${copy}`),
  });
  try {
    expect(run(['test', 'rules', tests]).status).not.toBe(0);
  } finally {
    execFileSync('rm', ['-f', copy, tests]);
  }
});

let database: TestDatabase;
let exported: Set<string>;
beforeAll(async () => {
  database = await createTestDatabase('sqlite');
  const storage = await openStorage(database.options);
  const metrics = createMetrics({ storage, dataDir: database.options.dataDir });
  const server = await startTestServer({ storage, metrics });
  const scrape = await startMetricsServer(
    metrics,
    { port: 0, host: '127.0.0.1', token: undefined },
    silentLogger,
  );
  try {
    await server.request('/healthz');
    const text = await (await fetch(scrape.url)).text();
    exported = new Set();
    for (const [, name, kind] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      if (name === undefined) continue;
      exported.add(name);
      if (kind === 'histogram' || kind === 'summary')
        for (const suffix of ['_bucket', '_count', '_sum']) exported.add(`${name}${suffix}`);
    }
  } finally {
    await scrape.close();
    await server.close();
    await storage.close();
  }
});
afterAll(() => database?.dispose());

it('every metric the alert rules use is exported by the server', () => {
  const used = metricNames(readFileSync(RULES, 'utf8').replace(/^\s*#.*$/gm, ''));
  expect(used.size).toBeGreaterThan(4);
  expect([...used].filter((name) => !exported.has(name))).toEqual([]);
});

it('every metric the Grafana dashboard uses is exported by the server', () => {
  const used = metricNames(dashboardQueries().join('\n'));
  expect(used.size).toBeGreaterThan(6);
  expect([...used].filter((name) => !exported.has(name))).toEqual([]);
});
