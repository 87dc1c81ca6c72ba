// Loaded only when tracing is on (see tracing.ts): the one module of the server that imports OpenTelemetry.
import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Tracing } from './tracing.js';

/** The request's own span, kept in the context so that what it raises links to it, not to a child. */
const REQUEST_SPAN = createContextKey('scenario-scoring request span');
/** Spans waiting for export, at most: beyond, new spans are dropped (never a request slowed). */
const MAX_QUEUE_SIZE = 2048;

/** `OTEL_TRACES_SAMPLER` (and `OTEL_TRACES_SAMPLER_ARG`) as the specification names them; default parentbased_always_on. */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const rate = Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1;
  switch (env.OTEL_TRACES_SAMPLER) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(rate);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(rate) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** Tracing by OpenTelemetry's SDK, exporting OTLP over HTTP (protobuf by default, JSON with `http/json`). */
export function createTracing(env: NodeJS.ProcessEnv): Tracing {
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  const exporter = protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter();
  const processor = new BatchSpanProcessor({ exporter, maxQueueSize: MAX_QUEUE_SIZE });
  const provider = new TracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'scenario-scoring' }),
    ),
    sampler: samplerFromEnv(env),
    spanProcessors: [processor],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  const propagator = new W3CTraceContextPropagator();
  propagation.setGlobalPropagator(propagator);
  const tracer = provider.getTracer('scenario-scoring');
  const sendTraceparent = env.WEBHOOK_SEND_TRACEPARENT !== 'false';

  const headerGetter = {
    keys: (carrier: Record<string, unknown>) => Object.keys(carrier),
    get: (carrier: Record<string, unknown>, key: string) => {
      const value = carrier[key];
      return typeof value === 'string' ? value : undefined;
    },
  };
  const traceparentOf = (span: Span): string | undefined => {
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, {
      set: (c, k, v) => {
        c[k] = v;
      },
    });
    return carrier.traceparent;
  };
  const linkTo = (traceparent: string | null | undefined): Link[] => {
    if (!traceparent) return [];
    const extracted = propagator.extract(ROOT_CONTEXT, { traceparent }, headerGetter);
    const linked = trace.getSpanContext(extracted);
    return linked ? [{ context: linked }] : [];
  };
  const settle = <T>(span: Span, result: T): T => {
    if (result instanceof Promise) {
      return result.then(
        (value) => {
          span.end();
          return value;
        },
        (error: unknown) => {
          fail(span, error);
          span.end();
          throw error;
        },
      ) as T;
    }
    span.end();
    return result;
  };
  const fail = (span: Span, error: unknown) => {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
  };
  const run = <T>(span: Span, parent: Context, fn: () => T): T => {
    try {
      return settle(span, context.with(trace.setSpan(parent, span), fn));
    } catch (error) {
      fail(span, error);
      span.end();
      throw error;
    }
  };

  return {
    requestMiddleware(routes) {
      return (req, res, next) => {
        // A malformed traceparent extracts nothing: the request starts a new trace.
        const parent = propagator.extract(ROOT_CONTEXT, req.headers, headerGetter);
        const method: string = req.method;
        const span = tracer.startSpan(
          method,
          { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
          parent,
        );
        const { traceId, spanId } = span.spanContext();
        res.locals.trace = { traceId, spanId };
        res.once('close', () => {
          const operation: string | undefined = res.locals.operationId;
          const route = operation === undefined ? undefined : routes.get(operation);
          if (route !== undefined) {
            span.updateName(`${method} ${route}`);
            span.setAttribute('http.route', route);
          }
          if (operation !== undefined) span.setAttribute('operation.id', operation);
          span.setAttribute('http.response.status_code', res.statusCode);
          if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        });
        context.with(trace.setSpan(parent, span).setValue(REQUEST_SPAN, span), next);
      };
    },
    inSpan(name, fn, attributes) {
      const parent = context.active();
      return run(tracer.startSpan(name, { attributes: attributes as Attributes }, parent), parent, fn);
    },
    captureContext: () => context.active(),
    inBatchSpan(name, contexts, fn, attributes) {
      const spans = contexts.flatMap((c) => {
        const span = trace.getSpanContext(c as Context);
        return span ? [span] : [];
      });
      const parent =
        (contexts.find((c) => trace.getSpanContext(c as Context)) as Context | undefined) ?? ROOT_CONTEXT;
      const span = tracer.startSpan(
        name,
        {
          attributes: { ...(attributes as Attributes), 'batch.size': contexts.length },
          links: spans.map((linked) => ({ context: linked })),
        },
        parent,
      );
      return run(span, parent, fn);
    },
    requestTraceparent() {
      const span = context.active().getValue(REQUEST_SPAN) as Span | undefined;
      return span && traceparentOf(span);
    },
    inDeliverySpan(linkedTraceparent, attributes, fn) {
      const span = tracer.startSpan(
        'webhook.delivery_attempt',
        {
          kind: SpanKind.CLIENT,
          root: true,
          attributes: attributes as Attributes,
          links: linkTo(linkedTraceparent),
        },
        ROOT_CONTEXT,
      );
      const traceparent = sendTraceparent ? traceparentOf(span) : undefined;
      return run(span, ROOT_CONTEXT, () => fn(traceparent));
    },
    async shutdown() {
      await provider.shutdown().catch(() => undefined);
      contextManager.disable();
    },
  };
}
