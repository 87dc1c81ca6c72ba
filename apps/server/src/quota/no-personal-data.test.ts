import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../request-logging/logger.js';

/** A subject no log line, metric label or error body may hold. */
const MARKER = 'MARKER-subject-7f3a9c';
const CONTEXT = { jurisdiction: 'FR' };

forEachDatabase('no personal data in logs, metrics and errors', ({ storage }) => {
  let server: TestServer;
  let key: string;
  const lines: string[] = [];
  let metrics: ReturnType<typeof createMetrics>;
  beforeAll(async () => {
    metrics = createMetrics({ processMetrics: false, storage: storage(), tenantStorageQuotaBytes: 1e9 });
    const logger = createLogger(
      { level: 'debug', format: 'json' },
      { write: (line: string) => lines.push(line) },
    );
    server = await startTestServer({ storage: storage(), logger, metrics });
    ({ key } = await testFeatures(storage()).keys.create('marker-tenant'));
  });
  afterAll(() => server.close());

  it('sends a marker subject through every operation that takes one, valid and not, and finds it in no log line, metric or error body', async () => {
    const bodies: string[] = [];
    const send = async (path: string, body: unknown) => {
      const response = await server.request(path, { key, body });
      const text = await response.text();
      if (response.status >= 400) bodies.push(text);
      return { status: response.status, text };
    };
    const webhook = await send('/v1/webhooks/register', { url: 'http://127.0.0.1:9/hook', events: ['*'] });
    expect([201, 422]).toContain(webhook.status);
    expect((await send('/v1/scoring/score', { subject: MARKER, context: CONTEXT })).status).toBe(200);
    // Validation failures around the subject: a context value that is wrong, an unknown member beside it,
    // a too long subject, a subject of the wrong type. (A member *name* is echoed in the error's path: the
    // subject is a value, never a name.)
    await send('/v1/scoring/score', { subject: MARKER, context: { jurisdiction: MARKER } });
    await send('/v1/scoring/score', { subject: MARKER, context: CONTEXT, unknown: 1 });
    await send('/v1/scoring/score', { subject: `${MARKER}${'x'.repeat(600)}`, context: CONTEXT });
    await send('/v1/scoring/score', { subject: [MARKER], context: CONTEXT });
    // Not JSON next to the subject: V8's parse error quotes the text around an unexpected token.
    expect(
      (await send('/v1/scoring/score', `{"subject":${MARKER},"context":{"jurisdiction":"FR"}}`)).status,
    ).toBe(400);
    expect(
      (await send('/v1/scoring/score', `{"context":{"jurisdiction":"FR"},"subject":"${MARKER}"x}`)).status,
    ).toBe(400);
    expect((await send('/v1/erasures', `{"subject":${MARKER}}`)).status).toBe(400);
    const run = await send('/v1/scoring/runs', { items: [{ subject: MARKER, context: CONTEXT }] });
    expect(run.status).toBe(202);
    await send('/v1/scoring/runs', { items: [{ subject: MARKER, context: { jurisdiction: 42 } }] });
    // No operation takes a subject in its path or query (a problem's `instance` is the path as sent).
    const scraped = await metrics.registry.metrics();
    expect(bodies.length).toBeGreaterThan(3);
    // Not even a part of it (V8's parse errors quote about ten characters around the unexpected one).
    for (const body of bodies) expect(body, body).not.toContain(MARKER.slice(0, 6));
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) expect(line).not.toContain(MARKER);
    expect(scraped).not.toContain(MARKER);
    expect(scraped).toContain('scenario_scoring_tenant_storage_bytes{tenant="marker-tenant"}');
    expect(scraped).toContain(
      'scenario_scoring_tenant_storage_quota_bytes{tenant="marker-tenant"} 1000000000',
    );
  });
});
