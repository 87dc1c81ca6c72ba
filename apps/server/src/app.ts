import { randomBytes } from 'node:crypto';
import type { OperationId } from '@scenario-scoring/api-types';
import { NoteSigner } from '@scenario-scoring/tlog';
import express, { type Express, type RequestHandler } from 'express';
import { type Clock, systemClock } from './common/clock.js';
import { type Contract, loadContract } from './common/contract.js';
import { type DocsOptions, docsRoutes } from './docs/docs-routes.js';
import { erasureRoutes } from './erasure/erasure-routes.js';
import { AppError } from './errors/app-error.js';
import type { Features } from './features.js';
import { healthRoute, readinessRoute } from './health/health-routes.js';
import { InstanceLifecycle } from './health/instance-lifecycle.js';
import { anonymousRateLimit } from './http/anonymous-rate-limit.js';
import { authenticate } from './http/auth.js';
import { BodyBudget, boundBodiesInFlight, INSTANCE_BODIES, TENANT_BODIES } from './http/body-budget.js';
import { TRUSTED_PROXIES_SETTING, trustedProxies } from './http/client-address.js';
import { allowedMethodsLookup, contractOperations } from './http/contract-routes.js';
import { contractValidation, requestValidationOnly } from './http/contract-validation.js';
import { deprecationHeaders } from './http/deprecation-headers.js';
import { createErrorHandler } from './http/error-handler.js';
import { headAsGet } from './http/head-requests.js';
import { listedTogether } from './http/listed-together.js';
import { inSequence } from './http/middleware-sequence.js';
import { identifyOperation, operationLookup } from './http/operation-lookup.js';
import { expressHandler, type OperationRoutes } from './http/operation-route.js';
import { requestId } from './http/request-id.js';
import { observeRequests } from './http/request-observer.js';
import { requiredScopes, requireScope } from './http/required-scopes.js';
import { securityHeaders } from './http/security-headers.js';
import { createRateLimit } from './http/shared-rate-limit.js';
import { enforceStorageQuota, quotaOperations } from './http/storage-quota-check.js';
import { refuseUnknownMembers, requestBodyShapes } from './http/unknown-members.js';
import { StorageQuota } from './quota/storage-quota.js';
import type { Config } from './server-config.js';
import { requireDeclaredContentEncoding } from './transport/content-encoding.js';
import { jsonBody } from './transport/json-body.js';
import { refuseMalformedRequests } from './transport/request-target.js';
import { integerPathParameters, integerQueryParameters, textPolicy } from './transport/text-policy.js';
import { boundUnreadBodies } from './transport/unread-body.js';
import './http/locals.js';
import { loadPolicy } from '@scenario-scoring/tlog';
import { createMetrics, type Metrics } from './metrics/metrics.js';
import { policyRoute } from './policies/policy-routes.js';
import { jsonLogger, type Logger } from './request-logging/logger.js';
import { DEFAULT_MAX_PENDING_ITEMS, DEFAULT_UPLOAD_LIMITS } from './runs/run-config.js';
import { lineReader } from './runs/run-lines.js';
import { createRunRoute, getRunRoute, listRunResultsRoute } from './runs/run-routes.js';
import { isNdjson, ndjsonRunUpload, UploadsInProgress } from './runs/run-upload.js';
import { noticeRoute } from './score-log/notice-routes.js';
import { logRoute } from './score-log/score-log-routes.js';
import { readLogRecord } from './score-log/score-log-service.js';
import { getModelRoute, listModelsRoute } from './scoring/model-routes.js';
import { scoreRoute } from './scoring/score-routes.js';
import { tracing } from './tracing/tracing.js';
import { awaitInclusion, InclusionWaiters } from './verifiable-log/inclusion-wait.js';
import { verifiableLogRoutes } from './verifiable-log/verifiable-log-routes.js';
import { selectOpenLogFaults } from './verifiable-log/verifiable-log-store.js';
import { inclusionProofView } from './verifiable-log/verifiable-log-views.js';
import { webhookRoutes } from './webhooks/api/webhook-routes.js';
import type { SecretBox } from './webhooks/outbound/secret-box.js';
import type { BackgroundPacer } from './workers/background-pacer.js';
import type { BackgroundWorker } from './workers/background-worker.js';

/**
 * On PostgreSQL, how often a scoring waiting for its inclusion proof also looks again: another instance's
 * sequencer may sign the checkpoint, and this instance's signal only hears its own.
 */
const INCLUSION_POLL_MS = 250;

/** What the app is built from. */
export interface AppOptions {
  /** The storage and the features' stores and signals, wired by the runtime (see features.ts). */
  features: Features;
  config: Config;
  logger?: Logger;
  /** The contract to serve and enforce; by default the bundled one. */
  contract?: Contract;
  /**
   * The contract validator, warmed up by the runtime before it listens (see warmUpContractValidation);
   * by default a new one, which compiles each operation's schemas on its first request.
   */
  validation?: RequestHandler[];
  /** The clock every handler reads; tests pass a fake one. */
  clock?: Clock;
  /** Encrypts webhook secrets at rest (see webhooks/outbound/secret-box.ts). */
  secretBox: SecretBox;
  /** The instance's background workers, reported by `/readyz`. */
  workers?: readonly BackgroundWorker[];
  /** The instance's Prometheus instruments; by default a registry of the app's own. */
  metrics?: Metrics;
  /** Where the instance is in its life, reported by `/readyz`; by default always running. */
  lifecycle?: InstanceLifecycle;
  /** Signs the verifiable log's checkpoints (its verifier key is served); by default a fresh random key. */
  logSigner?: NoteSigner;
  /** Called each time a published file's representation is made (tests count them: once per deployment). */
  onDocsPrepare?: DocsOptions['onPrepare'];
}

/**
 * The Express app of the server, without listening and without side effects (the runtime warms the
 * contract validator up before it listens). Every response carries `X-Request-Id`; every failure is a
 * problem+json from the one error handler.
 */
export async function createApp(options: AppOptions): Promise<Express> {
  const { features, config } = options;
  const { storage } = features;
  const logger = options.logger ?? jsonLogger;
  const clock = options.clock ?? systemClock;
  const workers = options.workers ?? [];
  const metrics = options.metrics ?? createMetrics({ processMetrics: false });
  const lifecycle = options.lifecycle ?? new InstanceLifecycle('running');
  const contract = options.contract ?? loadContract();
  const logSigner = options.logSigner ?? new NoteSigner(config.verifiableLog.keyName, randomBytes(32));
  const operations = contractOperations(contract.document);
  const routes = new Map(operations.map(({ operationId, path }) => [operationId, path]));
  const scopes = requiredScopes(operations, contract.document.security);
  const quota = new StorageQuota(storage.db, config.quota.tenantStorageQuotaBytes, {
    refreshMs: config.quota.usageRefreshMs,
  });
  const inclusionWaiters = new InclusionWaiters(config.verifiableLog.inclusionMaxWaiters);
  const uploadsInProgress = new UploadsInProgress();
  const validation =
    options.validation ??
    contractValidation(contract, {
      validateResponses: config.nodeEnv !== 'production',
      checkDocument: config.nodeEnv !== 'production',
    });

  // Operations not listed here are in the contract for a later version and answer 501.
  const implemented: OperationRoutes = {
    scoreSubject: scoreRoute(features.logs, metrics, clock, config.unknownJurisdiction, {
      maxWaitMs: config.verifiableLog.inclusionMaxWaitMs,
      await: async (tenantId, cid, waitMs) => {
        const proof = await inclusionWaiters.run(tenantId, () =>
          awaitInclusion(
            {
              db: storage.db,
              checkpoints: features.logCheckpoints,
              pollMs: storage.kind === 'postgres' ? INCLUSION_POLL_MS : undefined,
            },
            tenantId,
            cid,
            waitMs,
          ),
        );
        return proof && inclusionProofView(proof);
      },
    }),
    createRun: createRunRoute(
      {
        storage,
        runQueue: features.runQueue,
        keyedHash: features.keyedHash,
        maxPendingItems: config.runs.maxPendingItems ?? DEFAULT_MAX_PENDING_ITEMS,
        uploadingLines: (tenantId) => uploadsInProgress.lines(tenantId),
      },
      clock,
      config.unknownJurisdiction,
    ),
    listModels: listModelsRoute,
    getModel: getModelRoute,
    getNotice: noticeRoute(features.logs),
    getRun: getRunRoute({ storage }, clock),
    listRunResults: listRunResultsRoute({ storage }),
    getPolicy: policyRoute,
    getLogRecord: logRoute(features.logs),
    getHealth: healthRoute,
    getReadiness: readinessRoute({
      storage,
      workers,
      lifecycle,
      logFaults: () => selectOpenLogFaults(storage.db),
    }),
    ...webhookRoutes({
      storage,
      outbox: features.outbox,
      retired: features.retiredWebhooks,
      policy: config.webhooks,
      secretBox: options.secretBox,
      clock,
      keyedHash: features.keyedHash,
      logger,
    }),
    ...verifiableLogRoutes({
      storage,
      signer: logSigner,
      root: {
        policy:
          config.verifiableLog.witnessPolicy && (await loadPolicy(config.verifiableLog.witnessPolicy.text)),
        mode: config.verifiableLog.witnessMode,
      },
      readRecord: (tenantId, cid) => readLogRecord(features.logs, tenantId, cid),
    }),
    ...erasureRoutes(
      {
        storage,
        subjectKey: features.subjectKey,
        keyedHash: features.keyedHash,
        erasureQueue: features.erasureQueue,
        maxPendingPerTenant: config.erasure.maxPendingPerTenant,
      },
      clock,
    ),
  };

  const app = express();
  // The contract's paths exactly, as the mock matches them: Express (and the validator, which follows this
  // setting) would take /V1/Scoring/score for /v1/scoring/score, while a wrong method there got a 404.
  // Set before the first app.use, which creates the router with it.
  app.set('case sensitive routing', true);
  app.disable('x-powered-by');
  app.set(TRUSTED_PROXIES_SETTING, trustedProxies(config.trustedProxies, config.trustedProxyHeader));
  app.set('etag', false);
  // The app-wide middlewares run as three layers (see inSequence): what every answer carries, the API
  // key and its scope under /v1, then the body and the contract.
  app.use(
    inSequence([
      requestId,
      boundUnreadBodies(config.bodyLimitBytes),
      headAsGet,
      securityHeaders(),
      identifyOperation(operationLookup(operations)),
      deprecationHeaders(operations),
      ...(tracing ? [tracing.requestMiddleware(routes) as RequestHandler] : []),
      observeRequests(logger, metrics, { routes }),
      closeConnectionsWhileDraining(lifecycle),
      refuseMalformedRequests,
      ...(config.anonymousRateLimitPerSecond > 0
        ? [anonymousRateLimit(config.anonymousRateLimitPerSecond)]
        : []),
      docsRoutes(contract, {
        ...(config.publicBaseUrl !== undefined && { publicBaseUrl: config.publicBaseUrl }),
        ...(options.onDocsPrepare && { onPrepare: options.onDocsPrepare }),
      }),
    ]),
  );
  app.use(
    '/v1',
    inSequence([
      authenticate(features.keys),
      noteForeground(features.backgroundPacer),
      ...(config.rateLimitPerSecond > 0 ? [await createRateLimit(storage, config.rateLimitPerSecond)] : []),
      requireScope(scopes),
      enforceStorageQuota(quota, quotaOperations(operations)),
    ]),
  );
  const requestTextPolicy = textPolicy(
    integerQueryParameters(operations, contract.document.components),
    integerPathParameters(operations, contract.document.components),
  );
  // A run's items as NDJSON are streamed to storage here: neither the JSON parser nor the validator reads them.
  app.post(
    '/v1/scoring/runs',
    ndjsonRunUpload(
      {
        storage,
        runQueue: features.runQueue,
        keyedHash: features.keyedHash,
        maxPendingItems: config.runs.maxPendingItems ?? DEFAULT_MAX_PENDING_ITEMS,
      },
      {
        storage,
        clock,
        limits: config.runs.upload ?? DEFAULT_UPLOAD_LIMITS,
        readLine: lineReader(contract.document, config.unknownJurisdiction),
        pacer: features.backgroundPacer,
        quota,
        uploads: uploadsInProgress,
        // The JSON form's checks of the headers and query (below), without the body's.
        checkRequest: listedTogether(requestTextPolicy, requestValidationOnly(validation)),
      },
    ),
  );
  app.use(
    inSequence([
      requireDeclaredContentEncoding,
      boundBodiesInFlight(
        new BodyBudget(INSTANCE_BODIES * config.bodyLimitBytes, TENANT_BODIES * config.bodyLimitBytes),
        config.bodyLimitBytes,
      ),
      ...jsonBody(config.bodyLimitBytes),
      // Every problem of the request in one answer: the text policy's and the contract's.
      listedTogether(requestTextPolicy, [
        refuseUnknownMembers(requestBodyShapes(operations, contract.document)),
        ...validation,
      ]),
    ]),
  );
  for (const operation of operations) {
    const route = implemented[operation.operationId as OperationId];
    // Every operation of the contract is served: one without a route fails the app's creation (and so
    // every test that starts it), never a client's request.
    if (!route) throw new Error(`the contract's ${operation.operationId} has no route in this build`);
    app
      .route(operation.expressPath)
      [operation.method](expressHandler(route, operation, contract.document.components));
  }
  // The validator answers unknown paths first; this catches anything it lets through.
  app.use((req) => {
    throw new AppError('not_found', { detail: `No operation exists at ${req.method} ${req.path}.` });
  });
  app.use(
    createErrorHandler({
      logger,
      bodyLimitBytes: config.bodyLimitBytes,
      allowedMethods: allowedMethodsLookup(operations),
    }),
  );
  return app;
}

/**
 * Tells the pacer of every authenticated request a client waits on, so that background work gives way to
 * it. Not of an NDJSON run upload (background work itself), nor of reading a run or its results: a client
 * polling its run's progress must not slow that run.
 */
function noteForeground(pacer: BackgroundPacer): RequestHandler {
  return (req, res, next) => {
    const operation = res.locals.operationId;
    if (
      operation !== 'getRun' &&
      operation !== 'listRunResults' &&
      !(req.method === 'POST' && isNdjson(req.headers['content-type']))
    )
      pacer.noteForeground();
    next();
  };
}

/** While the instance drains, answers close their connection, so clients reconnect to another instance. */
function closeConnectionsWhileDraining(lifecycle: InstanceLifecycle): RequestHandler {
  return (_req, res, next) => {
    if (lifecycle.phase === 'draining') res.setHeader('Connection', 'close');
    next();
  };
}
