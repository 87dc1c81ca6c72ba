import type { ScoreRequest } from '@scenario-scoring/api-types';
import {
  buildLogRecordV2,
  canonicalBytes,
  cidOfBytes,
  effectivePolicy,
  scoreScorecard2,
} from '@scenario-scoring/engine';
import { expect, it } from 'vitest';
import { isPacked, recordLeafHash, unpackRecord } from '../storage/record-codec.js';
import { batchRows, scoreBatch, scoreItems } from './run-batch.js';

const NOW = new Date('2026-11-24T10:00:00.000Z');
const RUN = 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0';
// The second item cannot be scored (the contract refuses it at creation; here it stands for a bug).
const items = [
  { subject: 'a', context: { jurisdiction: 'DE', utilization: 0.35 } },
  { subject: 'b', context: {} },
  { subject: 'c', context: { jurisdiction: 'US-CA', on_time_ratio: 0.2, utilization: 0.99 } },
] as ScoreRequest[];
const source = { runId: RUN, tenantId: 'ten', items };
/** Per item, 1 when one of `events` escalated it. */
const escalatedFlags = (events: readonly { payload: string }[]) => {
  const subjects = events.map((event) => JSON.parse(event.payload).data.subject);
  expect(subjects.length).toBeGreaterThan(0);
  return items.map((item) => (subjects.includes(item.subject) ? 1 : 0));
};

it('scores a batch into per-item arrays, with no row objects: what crosses back from a scoring thread', () => {
  const scored = scoreItems(source, 10, NOW);
  // Each scored item's record is score-log/2 of kind run_item: the run, the item's index, NOW, a salt.
  // Packed where they were scored (storage/record-codec.ts), each with its record's leaf hash.
  const bytes = scored.records.map((stored) => unpackRecord(stored));
  expect(scored.records.every(isPacked)).toBe(true);
  expect(scored.leafHashes).toEqual(bytes.map(recordLeafHash));
  const records = bytes.map((record) => JSON.parse(record.toString()));
  for (const [n, i] of [0, 2].entries()) {
    const { subject, context } = items[i] as ScoreRequest;
    const policy = effectivePolicy(context.jurisdiction);
    const expected = buildLogRecordV2({
      identity: { kind: 'run_item', run_id: RUN, item: 10 + i },
      scored_at: NOW.toISOString(),
      salt: records[n].salt,
      model_version: 'scorecard-2',
      policy_id: policy.policy_id,
      policy_version: policy.policy_version,
      subject,
      context,
      result: scoreScorecard2(context, policy),
    });
    expect(bytes[n]).toEqual(Buffer.from(canonicalBytes(expected)));
    expect(records[n].salt).toMatch(/^[A-Za-z0-9_-]{43}$/);
  }
  expect(records[0].salt).not.toBe(records[1].salt);
  expect(scored.cids).toEqual([cidOfBytes(bytes[0] as Buffer), null, cidOfBytes(bytes[1] as Buffer)]);
  expect(scored.escalated).toEqual(escalatedFlags(scored.events));
  expect(scored.counts).toEqual({ succeeded: 2, failed: 1, escalated: scored.events.length });
  expect(Object.keys(scored).sort()).toEqual([
    'cids',
    'counts',
    'escalated',
    'events',
    'leafHashes',
    'records',
  ]);
});

it('makes the rows from it: a run item per item at its position, a log record per scored item', () => {
  const rows = batchRows(source, 40, NOW, scoreItems(source, 40, NOW));
  const flags = escalatedFlags(rows.events);
  expect(
    rows.items.map(({ item_index, subject, status, escalated }) => [item_index, subject, status, escalated]),
  ).toEqual([
    [40, 'a', 'ok', flags[0]],
    [41, 'b', 'error', 0],
    [42, 'c', 'ok', flags[2]],
  ]);
  expect(JSON.parse(rows.items[1]?.error as string)).toMatchObject({
    code: 'internal_error',
    detail: 'Item 41 could not be scored.',
  });
  expect(rows.items.map((item) => item.log_cid)).toEqual([
    rows.logRecords[0]?.cid,
    null,
    rows.logRecords[1]?.cid,
  ]);
  expect(rows.logRecords.map(({ bytes, leaf_hash, ...row }) => row)).toEqual(
    [0, 2].map((i) => ({
      tenant_id: 'ten',
      cid: rows.items[i]?.log_cid,
      request_id: RUN,
      created_at: NOW.toISOString(),
    })),
  );
  // Scored again, the same rows but for the CIDs: each scoring is a record of its own, with its own salt.
  const again = scoreBatch(source, 40, NOW).items;
  const withoutCid = ({ log_cid, ...item }: (typeof again)[number]) => item;
  expect(again.map(withoutCid)).toEqual(rows.items.map(withoutCid));
  expect(again[0]?.log_cid).not.toBe(rows.items[0]?.log_cid);
});
