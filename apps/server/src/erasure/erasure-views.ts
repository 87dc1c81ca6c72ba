import type { Erasure, SubjectRecord } from '@scenario-scoring/api-types';
import { erasureCounts } from './erasure-processor.js';
import type { ErasureRow } from './erasure-store.js';

/** An erasure row (and the first CIDs it erased, and whether it erased more) as the contract's `Erasure`. */
export function erasureView(row: ErasureRow, logCids: readonly string[], moreCids = false): Erasure {
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    created_at: row.created_at,
    completed_at: row.completed_at,
    counts: erasureCounts(row),
    log_cids: [...logCids],
    log_cids_has_more: moreCids,
  };
}

/** A log row of a subject as the contract's `SubjectRecord`: a run's records carry the run id as request id. */
export function subjectRecordView(row: {
  cid: string;
  request_id: string;
  created_at: string;
}): SubjectRecord {
  return {
    log_cid: row.cid,
    kind: row.request_id.startsWith('run_') ? 'run_item' : 'score',
    scored_at: row.created_at,
  };
}
