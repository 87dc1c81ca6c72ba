import { threadModule } from '../server-files.js';

/** A span's ids, for a log line. */
export interface TraceIds {
  traceId: string;
  spanId: string;
}

/** A request's trace, kept in `res.locals.trace` by the tracing middleware. */
export interface RequestTrace extends TraceIds {}

/**
 * What the server asks of tracing. Implemented by otel-tracing.ts, loaded only when the `OTEL_*` variables
 * ask for tracing: with tracing off, no OpenTelemetry module is imported and `tracing` stays undefined, so
 * each place that traces pays one check of it.
 */
export interface Tracing {
  /**
   * Express middleware: a server span per request, continuing a valid incoming `traceparent` (a malformed
   * one is ignored: a new trace), named by the matched operation's route (`POST /v1/scoring/score`) once
   * known; `routes` maps operationIds to the contract's path templates.
   */
  // biome-ignore lint/suspicious/noExplicitAny: Express's handler, typed where it is used (no Express import here)
  requestMiddleware(routes: ReadonlyMap<string, string>): (req: any, res: any, next: () => void) => void;
  /** Runs `fn` in a child span of the active one (a promise's span ends when it settles). */
  inSpan<T>(name: string, fn: () => T, attributes?: Record<string, string | number>): T;
  /** The active context, to parent or link a later batch span to. */
  captureContext(): unknown;
  /** Runs `fn` in a span parented by the first of `contexts` and linked to all of them. */
  inBatchSpan<T>(
    name: string,
    contexts: readonly unknown[],
    fn: () => Promise<T>,
    attributes?: Record<string, string | number>,
  ): Promise<T>;
  /** The W3C `traceparent` of the active request's span, to store with the events it raises. */
  requestTraceparent(): string | undefined;
  /**
   * Runs a webhook delivery attempt in a root span of its own, linked to `linkedTraceparent` (the span of
   * the request that raised the event); `fn` gets the `traceparent` to send (undefined when sending it is
   * turned off).
   */
  inDeliverySpan<T>(
    linkedTraceparent: string | null | undefined,
    attributes: Record<string, string | number>,
    fn: (traceparent: string | undefined) => Promise<T>,
  ): Promise<T>;
  /** Exports what is buffered (bounded in time) and stops. */
  shutdown(): Promise<void>;
}

/** The instance's tracing; undefined when off (the default). */
export let tracing: Tracing | undefined;

/** Whether the environment asks for traces: an OTLP endpoint is set and the exporter is not `none`. */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts tracing when the environment asks for it, loading OpenTelemetry only then. The implementation is
 * tsc's output beside the server's modules (not in the production bundle: see server-files.ts), so the
 * bundle never carries or parses OpenTelemetry.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  const module = (await import(threadModule('tracing/otel-tracing').href)) as {
    createTracing(env: NodeJS.ProcessEnv): Tracing;
  };
  tracing = module.createTracing(env);
  return tracing;
}

/** Stops tracing, exporting what is buffered. */
export async function stopTracing(): Promise<void> {
  const current = tracing;
  tracing = undefined;
  await current?.shutdown();
}

/** `fn` in a span named `name` when tracing is on; else just `fn()`. */
export function traced<T>(name: string, fn: () => T, attributes?: Record<string, string | number>): T {
  return tracing ? tracing.inSpan(name, fn, attributes) : fn();
}
