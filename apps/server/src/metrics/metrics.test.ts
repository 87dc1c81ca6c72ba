import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { insertEvents, newEvent } from '../events/event-outbox.js';
import { silentLogger } from '../request-logging/logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { type MetricsServer, startMetricsServer } from './metrics-server.js';

const TOKEN = 'scrape-token-0123456789';

/** The value of one series in Prometheus text, e.g. `scenario_scoring_scores_total`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

forEachDatabase('metrics', ({ storage }) => {
  let metrics: Metrics;
  let server: TestServer;
  let scrape: MetricsServer;
  let key: string;
  beforeAll(async () => {
    metrics = createMetrics({ storage: storage(), dataDir: tmpdir() });
    server = await startTestServer({ storage: storage(), metrics });
    scrape = await startMetricsServer(metrics, { port: 0, host: '127.0.0.1', token: TOKEN }, silentLogger);
    ({ key } = await testFeatures(storage()).keys.create('metrics'));
  });
  afterAll(async () => {
    await server.close();
    await scrape.close();
  });

  const read = async () => {
    const response = await fetch(scrape.url, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return response.text();
  };

  it('counts scores and observes each request as OpenTelemetry names it: method, route template, status', async () => {
    for (let n = 0; n < 3; n++) {
      const response = await server.request('/v1/scoring/score', {
        key,
        body: { subject: `metrics-${n}`, context: { jurisdiction: 'DE' } },
      });
      expect(response.status).toBe(200);
    }
    expect((await server.request('/v1/scoring/policies/DE')).status).toBe(401);
    expect((await server.request('/nowhere')).status).toBe(404);
    // A request is observed when its response has ended, which the client may see first.
    const deadline = Date.now() + 5000;
    let text = await read();
    while (!text.includes('http_response_status_code="404"') && Date.now() < deadline) text = await read();

    const count = (method: string, route: string, status: number) =>
      sample(
        text,
        `http_server_request_duration_seconds_count{http_request_method="${method}",http_route="${route}",http_response_status_code="${status}"}`,
      );
    expect(sample(text, 'scenario_scoring_scores_total')).toBe(3);
    expect(count('POST', '/v1/scoring/score', 200)).toBe(3);
    // The route template, never the concrete path or its id.
    expect(count('GET', '/v1/scoring/policies/{jurisdiction}', 401)).toBe(1);
    expect(text).not.toMatch(/http_route="[^"]*\/DE"/);
    // No operation matched: no route.
    expect(count('GET', '', 404)).toBe(1);
    // The buckets OpenTelemetry's HTTP semantic conventions recommend.
    const buckets = [
      ...text.matchAll(
        /^http_server_request_duration_seconds_bucket\{le="([^"]+)",http_request_method="POST"/gm,
      ),
    ].map((match) => match[1]);
    expect(buckets).toEqual([
      '0.005',
      '0.01',
      '0.025',
      '0.05',
      '0.075',
      '0.1',
      '0.25',
      '0.5',
      '0.75',
      '1',
      '2.5',
      '5',
      '7.5',
      '10',
      '+Inf',
    ]);
    expect(text).not.toMatch(/scenario_scoring_http_request_duration_seconds/);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
  });

  it('names an invented method _OTHER, so a client cannot make series of its own', async () => {
    await fetch(`${server.url}/v1/scoring/score`, { method: 'PROPFIND' }).catch(() => undefined);
    const deadline = Date.now() + 5000;
    let text = await read();
    while (!text.includes('http_request_method="_OTHER"') && Date.now() < deadline) text = await read();
    expect(text).toMatch(/http_request_method="_OTHER"/);
    expect(text).not.toMatch(/PROPFIND/);
  });

  it('reads the outbox depth from the database at scrape time', async () => {
    const { db } = storage();
    // Earlier tests' escalated scores left their own policy.escalated events: count from here.
    const before = await read();
    const depth = (text: string, stage: string) =>
      (sample(text, `scenario_scoring_outbox_depth{stage="${stage}"}`) ?? 0) -
      (sample(before, `scenario_scoring_outbox_depth{stage="${stage}"}`) ?? 0);
    const now = new Date();
    const at = now.toISOString();
    const data = { webhook_id: 'wh_metrics', message: 'hello' };
    const [dispatched, ...waiting] = [0, 1, 2].map(() => newEvent('metrics', 'webhook.test', data, now));
    if (dispatched === undefined) throw new Error('no event');
    await insertEvents(db, [dispatched, ...waiting]);
    await db.updateTable('events').set({ dispatched_at: at }).where('id', '=', dispatched.id).execute();
    await db
      .insertInto('webhooks')
      .values({
        id: 'wh_metrics',
        tenant_id: 'metrics',
        url: 'https://example.com/hook',
        events: '["*"]',
        description: null,
        status: 'active',
        disabled_reason: null,
        failing_since: null,
        created_at: at,
        updated_at: at,
      })
      .execute();
    const delivery = (id: string, status: 'pending' | 'succeeded', eventId: string) => ({
      id,
      tenant_id: 'metrics',
      webhook_id: 'wh_metrics',
      event_id: eventId,
      event_type: 'webhook.test',
      status,
      next_attempt_at: status === 'pending' ? at : null,
      created_at: at,
      updated_at: at,
    });
    await db
      .insertInto('deliveries')
      .values([
        delivery('dlv_metrics_1', 'pending', dispatched.id),
        delivery('dlv_metrics_2', 'succeeded', waiting[0]?.id ?? ''),
      ])
      .execute();

    const text = await read();
    expect(depth(text, 'undispatched_events')).toBe(2);
    expect(depth(text, 'pending_deliveries')).toBe(1);
  });

  it('reads how old the oldest waiting event, due delivery and unsigned log record are, and the last checkpoint', async () => {
    const { db } = storage();
    const old = new Date(Date.now() - 120_000);
    await insertEvents(db, [
      newEvent('metrics', 'webhook.test', { webhook_id: 'wh_metrics', message: 'old' }, old),
    ]);
    await db
      .insertInto('log_checkpoints')
      .values({
        tenant_id: 'metrics',
        tree_size: 1,
        root_hash: new Uint8Array(32),
        note: 'a note',
        created_at: '2026-11-22T10:00:00.000Z',
      })
      .execute();
    const text = await read();
    expect(
      sample(text, 'scenario_scoring_webhook_backlog_oldest_age_seconds{stage="undispatched_events"}'),
    ).toBeGreaterThanOrEqual(120);
    // The pending delivery of the outbox test came due when it was written.
    expect(
      sample(text, 'scenario_scoring_webhook_backlog_oldest_age_seconds{stage="due_deliveries"}'),
    ).toBeGreaterThan(0);
    // This test server runs no sequencer: the records scored above still wait for their leaves.
    expect(sample(text, 'scenario_scoring_log_unsequenced_oldest_age_seconds')).toBeGreaterThan(0);
    expect(sample(text, 'scenario_scoring_log_last_checkpoint_timestamp_seconds')).toBe(
      Date.parse('2026-11-22T10:00:00.000Z') / 1000,
    );
    expect(sample(text, 'scenario_scoring_data_dir_filesystem_avail_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'scenario_scoring_data_dir_filesystem_size_bytes')).toBeGreaterThan(0);
  });

  it('counts runs by state from the database at scrape time, every state reported', async () => {
    const db = storage().db;
    const at = '2026-11-22T10:00:00.000Z';
    const run = (id: string, status: 'queued' | 'completed') => ({
      id,
      tenant_id: 'metrics',
      status,
      item_count: 1,
      items: '[]',
      created_at: at,
      deadline_at: null,
    });
    await db
      .insertInto('runs')
      .values([
        run('run_metrics_1', 'queued'),
        run('run_metrics_2', 'queued'),
        run('run_metrics_3', 'completed'),
      ])
      .execute();
    const text = await read();
    expect(sample(text, 'scenario_scoring_runs{state="queued"}')).toBe(2);
    expect(sample(text, 'scenario_scoring_runs{state="completed"}')).toBe(1);
    expect(sample(text, 'scenario_scoring_runs{state="running"}')).toBe(0);
    expect(sample(text, 'scenario_scoring_runs{state="failed"}')).toBe(0);
  });

  it('exposes the delivery instruments for the delivery worker', async () => {
    metrics.deliveryAttempts.inc({ result: 'succeeded' });
    metrics.deliveryAttempts.inc({ result: 'timeout' });
    metrics.deliveryLagSeconds.observe(0.3);
    const text = await read();
    expect(sample(text, 'scenario_scoring_webhook_delivery_attempts_total{result="succeeded"}')).toBe(1);
    expect(sample(text, 'scenario_scoring_webhook_delivery_attempts_total{result="timeout"}')).toBe(1);
    expect(sample(text, 'scenario_scoring_webhook_delivery_lag_seconds_count')).toBe(1);
  });
});

describe('the metrics listener', () => {
  let scrape: MetricsServer;
  beforeAll(async () => {
    scrape = await startMetricsServer(
      createMetrics({ processMetrics: false }),
      { port: 0, host: '127.0.0.1', token: TOKEN },
      silentLogger,
    );
  });
  afterAll(() => scrape.close());

  it('refuses a scrape without the token, or with another one, with 401', async () => {
    expect((await fetch(scrape.url)).status).toBe(401);
    const wrong = await fetch(scrape.url, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
  });

  it('serves nothing but GET /metrics', async () => {
    const other = await fetch(scrape.url.replace('/metrics', '/v1/scoring/score'), {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(other.status).toBe(404);
  });
});
