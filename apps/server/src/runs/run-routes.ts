import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Clock } from '../common/clock.js';
import { replyCreated } from '../http/created-reply.js';
import { sendJsonCompressible } from '../http/json-answer.js';
import type { OperationHandler } from '../http/operation-route.js';
import { scoringPolicy, type UnknownJurisdictionMode } from '../policies/scoring-policy.js';
import {
  createRun,
  DEFAULT_RESULTS_LIMIT,
  getRun,
  listRunResults,
  type RunServiceDeps,
  streamRunResults,
  tenantRun,
} from './run-service.js';
import { NDJSON_MEDIA_TYPE } from './run-upload.js';
import { decodeResultsCursor } from './run-view.js';

/**
 * `POST /v1/scoring/runs`: the items were validated against the contract (each error names its index);
 * the run is stored `queued` with its Idempotency-Key record, and this instance's run workers are woken.
 * A deployment that refuses jurisdictions without a policy of their own refuses the run (422
 * `unknown_jurisdiction`, naming the first such item) before anything is stored. (An NDJSON body is taken
 * by run-upload.ts before this route.)
 */
export function createRunRoute(
  deps: RunServiceDeps,
  clock: Clock,
  unknownJurisdiction: UnknownJurisdictionMode = 'default',
): OperationHandler<'createRun'> {
  return async (req, res) => {
    if (unknownJurisdiction === 'refuse')
      for (const [index, item] of req.body.items.entries())
        scoringPolicy(item.context.jurisdiction, unknownJurisdiction, index);
    const { tenantId, keyId } = res.locals.apiKey;
    const caller = { tenantId, keyId, idempotencyKey: req.get('Idempotency-Key') };
    const run = await createRun(deps, caller, req.body, clock.now());
    replyCreated(res, 202, `/v1/scoring/runs/${run.value.id}`, run);
  };
}

/** `GET /v1/scoring/runs/{id}`: another tenant's run answers 404 like an unknown one. */
export function getRunRoute(deps: Pick<RunServiceDeps, 'storage'>, clock: Clock): OperationHandler<'getRun'> {
  return async (req, res) => {
    res.json(await getRun(deps, res.locals.apiKey.tenantId, req.params.id, clock.now()));
  };
}

/**
 * `GET /v1/scoring/runs/{id}/results`: attempted items in item order, a page at a time from `cursor` (or
 * from item `from`); with `Accept: application/x-ndjson`, all of them from item `from` as NDJSON, streamed
 * with backpressure (gzip when Accept-Encoding takes it), a page of rows in memory at a time. A HEAD
 * answers the stream's headers once the run is found, without reading a result.
 */
export function listRunResultsRoute(
  deps: Pick<RunServiceDeps, 'storage'>,
): OperationHandler<'listRunResults'> {
  return async (req, res) => {
    const from = (req.query as { from?: number }).from ?? 0;
    if (req.accepts(['application/json', NDJSON_MEDIA_TYPE]) === NDJSON_MEDIA_TYPE) {
      const run = await tenantRun(deps, res.locals.apiKey.tenantId, req.params.id);
      const gzip = req.acceptsEncodings(['identity', 'gzip']) === 'gzip';
      res.status(200).type(NDJSON_MEDIA_TYPE).set('Vary', 'Accept, Accept-Encoding');
      if (gzip) res.set('Content-Encoding', 'gzip');
      // HEAD (served as its GET, http/head-requests.ts) gets these headers and no body: the results are
      // not read. Node sends neither Content-Length nor Transfer-Encoding for it, as the GET's length is
      // not known before its last line.
      if (res.locals.head) {
        res.end();
        return;
      }
      const lines = Readable.from(
        (async function* () {
          for await (const item of streamRunResults(deps, run, from)) yield `${JSON.stringify(item)}\n`;
        })(),
      );
      // A client that goes away ends the pipeline (and the reads); nothing is left to answer. Any other
      // failure once lines went out (a record that cannot be read: a damaged row) goes to the error
      // handler, which logs it and ends the connection: the client sees the stream cut, and resumes
      // with `from` after the last line it read.
      await (gzip ? pipeline(lines, createGzip(), res) : pipeline(lines, res)).catch((error) => {
        if (res.headersSent && (error as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') {
          res.destroy();
          return;
        }
        throw error;
      });
      return;
    }
    const page = {
      after: req.query.cursor === undefined ? from - 1 : decodeResultsCursor(req.query.cursor),
      limit: req.query.limit ?? DEFAULT_RESULTS_LIMIT,
    };
    sendJsonCompressible(
      req,
      res,
      await listRunResults(deps, res.locals.apiKey.tenantId, req.params.id, page),
    );
  };
}
