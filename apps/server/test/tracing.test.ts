import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuiltServer } from './support/built-server.js';
import { receivedIds, useServerProcesses, webhookTo } from './support/webhook-server-process.js';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  links?: { traceId: string; spanId: string }[];
  attributes?: { key: string; value: { stringValue?: string } }[];
}

/** A tiny OTLP/HTTP receiver: POST /v1/traces with JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json). */
async function otlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; server: Server }> {
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as {
          resourceSpans: { scopeSpans: { spans: ReceivedSpan[] }[] }[];
        };
        for (const resource of body.resourceSpans)
          for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const ESCALATED = { jurisdiction: 'US-CA' };

describe('OpenTelemetry tracing of the built server', () => {
  const { prepare, serve, receive } = useServerProcesses();
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });

  it.each(['sqlite', 'postgres'] as const)(
    'follows an escalating scoring from the request to the webhook attempt, linked, with trace ids in the log (%s)',
    async (kind) => {
      const otlp = await otlpReceiver();
      closers.push(() => otlp.server.close());
      const setup = await prepare(kind, {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'tracing-test',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      });
      const receiver = await receive((_r, _i, res) => res.end('ok'));
      await webhookTo(setup, receiver);
      const server = await serve(setup);
      const url = await server.baseUrl();
      const key = server.firstKey();
      const response = await fetch(`${url}/v1/scoring/score`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          traceparent: `00-${INCOMING_TRACE}-00f067aa0ba902b7-01`,
        },
        body: JSON.stringify({ subject: 'traced-subject', context: ESCALATED }),
      });
      expect(response.status).toBe(200);
      await waitUntil(() => receivedIds(receiver).length >= 1, 15_000, 'the webhook attempt');
      await waitUntil(
        () => otlp.spans.some((span) => span.name === 'webhook.delivery_attempt'),
        15_000,
        'the attempt span',
      );
      const request = otlp.spans.find((span) => span.name === 'POST /v1/scoring/score');
      expect(request?.traceId).toBe(INCOMING_TRACE);
      expect(request?.parentSpanId).toBe('00f067aa0ba902b7');
      const child = (parent: ReceivedSpan | undefined, name: string) =>
        otlp.spans.find((span) => span.name === name && span.parentSpanId === parent?.spanId);
      const scoring = child(request, 'scoring.score');
      expect(child(scoring, 'engine.score')).toBeDefined();
      const append = child(scoring, 'score_log.append');
      const commit = child(append, 'score_log.commit');
      expect(commit?.traceId).toBe(INCOMING_TRACE);
      expect(child(commit, 'outbox.enqueue')).toBeDefined();

      const attempt = otlp.spans.find((span) => span.name === 'webhook.delivery_attempt');
      expect(attempt?.traceId).not.toBe(INCOMING_TRACE);
      expect(attempt?.links).toEqual([
        expect.objectContaining({ traceId: INCOMING_TRACE, spanId: request?.spanId }),
      ]);
      expect(receiver.requests[0]?.headers.traceparent).toBe(`00-${attempt?.traceId}-${attempt?.spanId}-01`);

      const line = server.logLines().find((l) => l.message === 'request' && l.operation === 'scoreSubject');
      expect(line).toMatchObject({ trace_id: INCOMING_TRACE, span_id: request?.spanId });
    },
  );

  it('ignores a malformed traceparent (a new trace), and answers promptly with the OTLP endpoint down', async () => {
    const setup = await prepare('sqlite', {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', // nothing listens
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    const server: BuiltServer = await serve(setup);
    const url = await server.baseUrl();
    const key = server.firstKey();
    for (let n = 0; n < 5; n++) {
      const started = performance.now();
      const response = await fetch(`${url}/v1/scoring/score`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          traceparent: n % 2 === 0 ? 'not-a-traceparent' : `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
        },
        body: JSON.stringify({ subject: `s${n}`, context: { jurisdiction: 'DE' } }),
      });
      expect(response.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1000);
    }
    const lines = () =>
      server.logLines().filter((l) => l.message === 'request' && l.operation === 'scoreSubject');
    await waitUntil(() => lines().length === 5, 5_000, 'the request lines');
    for (const line of lines()) expect(line.trace_id).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
  });
});
