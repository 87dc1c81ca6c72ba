import type { Clock } from '../clock.js';
import { AppError } from '../errors/app-error.js';
import type { OutboxSignal } from '../events/event-outbox.js';
import { toPage } from '../http/list-cursor.js';
import type { OperationHandler } from '../http/operation-route.js';
import { idempotentCreate, sendOutcome } from '../idempotency/idempotent-create.js';
import { newId } from '../ids.js';
import type { Storage } from '../storage/storage.js';
import { findRun, insertRun, listRunItems, type RunRecord } from './run-store.js';
import { decodeResultsCursor, encodeResultsCursor, runItemView, runView } from './run-view.js';

const DEFAULT_RESULTS_LIMIT = 100;

/**
 * `POST /v1/scoring/runs`: the items were validated against the contract (each error names its index);
 * the run is stored `queued` with its Idempotency-Key record, and this instance's run workers are woken.
 */
export function createRunRoute(
  storage: Pick<Storage, 'db'>,
  runQueue: Pick<OutboxSignal, 'notify'>,
  clock: Clock,
): OperationHandler<'createRun'> {
  return async (req, res) => {
    const { tenantId, keyId } = res.locals.apiKey;
    const now = clock.now();
    const scope = {
      apiKeyId: keyId,
      key: req.get('Idempotency-Key'),
      operation: 'createRun',
      body: req.body,
    };
    const outcome = await idempotentCreate(storage.db, scope, now, async (trx) => {
      const { items, deadline_seconds } = req.body;
      const deadlineAt =
        deadline_seconds === undefined ? null : new Date(now.getTime() + deadline_seconds * 1000);
      const run = await insertRun(trx, { id: newId('run'), tenantId, items, now, deadlineAt });
      return { status: 202, headers: { Location: `/v1/scoring/runs/${run.id}` }, body: runView(run) };
    });
    if (!outcome.replayed) runQueue.notify();
    sendOutcome(res, outcome);
  };
}

/** `GET /v1/scoring/runs/{id}`: another tenant's run answers 404 like an unknown one. */
export function getRunRoute(storage: Pick<Storage, 'db'>): OperationHandler<'getRun'> {
  return async (req, res) => {
    res.json(runView(await tenantRun(storage, res.locals.apiKey.tenantId, req.params.id)));
  };
}

/** `GET /v1/scoring/runs/{id}/results`: attempted items in item order, a page at a time. */
export function listRunResultsRoute(storage: Pick<Storage, 'db'>): OperationHandler<'listRunResults'> {
  return async (req, res) => {
    const run = await tenantRun(storage, res.locals.apiKey.tenantId, req.params.id);
    // The validator checked (and coerced) the query against the contract.
    const { query } = req;
    const after = decodeResultsCursor(query.cursor);
    const limit = Number(query.limit ?? DEFAULT_RESULTS_LIMIT);
    // One row more than the page tells whether another page exists, without counting.
    const rows = await listRunItems(storage.db, run, after, limit + 1);
    res.json(toPage(rows, limit, runItemView, (item) => encodeResultsCursor(item.item_index)));
  };
}

async function tenantRun(storage: Pick<Storage, 'db'>, tenantId: string, runId: string): Promise<RunRecord> {
  const run = await findRun(storage.db, tenantId, runId);
  if (!run) throw new AppError('not_found', { detail: `No run with id ${runId} exists for this API key.` });
  return run;
}
