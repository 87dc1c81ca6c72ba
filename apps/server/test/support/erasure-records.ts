import { scoreAndLog } from '@scenario-scoring/engine';
import { recordStamp } from '../../src/score-log/record-stamp.js';
import { insertLogRecords } from '../../src/score-log/score-log-store.js';
import { unpackRecord } from '../../src/storage/record-codec.js';
import type { Storage } from '../../src/storage/storage.js';
import { testFeatures } from './test-features.js';

/**
 * Logs `count` scorings of `subject` for `tenantId`, a minute old (before any erasure a test then accepts),
 * through the log's own insert, 500 a transaction; resolves with their CIDs, sorted. Their request ids are
 * `req_<batch><n>`. (Scorings, not run items: a run item's record is found through its run item, which
 * this does not write: migration 0024.)
 */
export async function logSubjectRecords(
  storage: Storage,
  tenantId: string,
  subject: string,
  batch: string,
  count: number,
): Promise<string[]> {
  const at = new Date(Date.now() - 60_000);
  const label = batch.replace(/[^0-9A-Za-z]/g, '');
  const records = Array.from({ length: count }, (_, item) => {
    const requestId = `req_${label}${item}`;
    const logged = scoreAndLog(
      subject,
      { jurisdiction: 'DE', utilization: (item % 90) / 100 },
      recordStamp({ kind: 'score', request_id: requestId }, at),
    );
    return { tenantId, cid: logged.logCid, bytes: logged.logBytes, requestId, createdAt: at, subject };
  });
  for (let start = 0; start < count; start += 500)
    await insertLogRecords(storage, records.slice(start, start + 500), testFeatures(storage).subjectKey);
  return records.map((record) => record.cid).sort();
}

/** An `erasure-log/1` record as logged. */
export interface ErasureLog {
  schema: string;
  erasure_id: string;
  erased_at: string;
  log_cids: string[];
}

/** The `erasure-log/1` records an erasure appended to the tenant's log, ordered by their first CID. */
export async function erasureLogsOf(
  storage: Storage,
  tenantId: string,
  erasureId: string,
): Promise<ErasureLog[]> {
  const rows = await storage.db
    .selectFrom('log_records')
    .select('bytes')
    .where('tenant_id', '=', tenantId)
    .where('request_id', '=', erasureId)
    .execute();
  return rows
    .map((row) => JSON.parse(unpackRecord(row.bytes as Uint8Array).toString('utf8')) as ErasureLog)
    .sort((a, b) => (a.log_cids[0] ?? '').localeCompare(b.log_cids[0] ?? ''));
}

/** `storage` for an erasure worker, counting the transactions that write to the log (its erasure-log records). */
export function countingLogWrites(storage: Storage): {
  storage: Pick<Storage, 'db' | 'kind' | 'transact'>;
  logged: () => number;
} {
  let logged = 0;
  return {
    storage: {
      db: storage.db,
      kind: storage.kind,
      transact: async (steps, options) => {
        const results = await storage.transact(steps, options);
        if (steps.some((step) => ('statement' in step ? step.statement : step).sql.includes('log_records')))
          logged++;
        return results;
      },
    },
    logged: () => logged,
  };
}
