import type { Problem, Run, RunItemError, RunItemResult } from '@scenario-scoring/api-types';
import { AppError } from '../errors/app-error.js';
import { problem } from '../errors/problem.js';
import { validationDetail } from '../errors/validation-detail.js';
import { servedRecord } from '../score-log/score-log-store.js';
import type { RunItemRecord, RunRecord } from './run-store.js';

/**
 * A run row as the contract's `Run`, its progress as of `now`: the items attempted (`next_index`), of which
 * failed, and the items attempted per second from its start to its end (or `now`), null before its start.
 */
export function runView(run: RunRecord, now: Date): Run {
  const started = run.started_at === null ? null : Date.parse(run.started_at);
  const until = run.completed_at === null ? now.getTime() : Date.parse(run.completed_at);
  const seconds = started === null ? 0 : Math.max(until - started, 1) / 1000;
  return {
    id: run.id,
    status: run.status as Run['status'],
    item_count: run.item_count,
    counts: { succeeded: run.succeeded, failed: run.failed, escalated: run.escalated },
    progress: {
      attempted: run.next_index,
      failed: run.failed,
      items_per_second: started === null ? null : Math.round((run.next_index / seconds) * 10) / 10,
    },
    created_at: run.created_at,
    started_at: run.started_at,
    completed_at: run.completed_at,
    deadline_at: run.deadline_at,
    error: run.error === null ? null : (JSON.parse(run.error) as Problem),
  };
}

const decoder = new TextDecoder();

/** The part of a log record the results read. */
interface LoggedResult {
  result: RunItemResult['result'];
}

/**
 * An attempted item as the contract's `RunItemResult` or `RunItemError`; a result is its log record's. An
 * item of an NDJSON run that failed names its line (`lines`); one whose line had no valid subject (stored
 * as ''), or an erased one, has none.
 */
export function runItemView(item: RunItemRecord, lines = false): RunItemResult | RunItemError {
  if (item.erasure_id !== null && item.erasure_id !== undefined) {
    // No subject: the stored one is a placeholder once erased (ERASED_SUBJECT), not anyone's.
    return {
      index: item.item_index,
      status: 'error',
      error: problem('log_record_erased', {
        detail: `Item ${item.item_index} was erased by ${item.erasure_id}.`,
      }),
    };
  }
  if (item.status === 'error') {
    return {
      index: item.item_index,
      ...(item.subject !== '' && { subject: item.subject }),
      status: 'error',
      error: JSON.parse(item.error ?? 'null') as Problem,
      ...(lines && { line: item.item_index + 1 }),
    };
  }
  return {
    index: item.item_index,
    subject: item.subject,
    status: 'ok',
    result: apiOrder(
      (
        JSON.parse(
          decoder.decode(item.bytes ? servedRecord(item.bytes, item.log_cid as string) : undefined),
        ) as LoggedResult
      ).result,
    ),
    log_cid: item.log_cid as string,
    escalated: item.escalated === 1,
  };
}

/**
 * A result as the log record holds it (RFC 8785 sorts keys) in the order the API documents; its reasons
 * (records of scorecard-2) as recorded, statements in English.
 */
function apiOrder(result: RunItemResult['result']): RunItemResult['result'] {
  const ordered: RunItemResult['result'] = {
    scenarios: result.scenarios.map(({ name, score, explain }) => ({ name, score, explain })),
    levers: result.levers.map(({ name, direction, delta, step }) => ({ name, direction, delta, step })),
  };
  if (result.reasons !== undefined)
    ordered.reasons = result.reasons.map(({ code, factor, rank, points_below_max, statement, lever }) => ({
      code,
      factor,
      rank,
      points_below_max,
      statement,
      ...(lever !== undefined && { lever }),
    }));
  return ordered;
}

const CURSOR_PATTERN = /^i:(\d{1,7})$/;

/** The opaque cursor of the page after item `index`. */
export function encodeResultsCursor(index: number): string {
  return Buffer.from(`i:${index}`).toString('base64url');
}

/** The item index a cursor continues after; a 400 naming `/query/cursor` for one this API did not make. */
export function decodeResultsCursor(cursor: string | undefined): number {
  if (cursor === undefined) return -1;
  const match = CURSOR_PATTERN.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!match) {
    const errors = [{ path: '/query/cursor', message: 'is not a cursor returned by this API' }];
    throw new AppError('validation_failed', { detail: validationDetail(errors), errors });
  }
  return Number(match[1]);
}
