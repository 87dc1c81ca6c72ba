import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ScoreRequest } from '@scenario-scoring/api-types';
import { afterAll, describe, expect, it } from 'vitest';
import { recordLeafHash, unpackRecord } from '../storage/record-codec.js';
import { scoreBatch } from './run-batch.js';
import { ScoringPool } from './scoring-pool.js';

// The threads run the built script (the server's dist), as the running server does.
const BUILT_THREAD = new URL('../../dist/runs/scoring-thread.js', import.meta.url);
const NOW = new Date('2026-11-22T10:00:00.000Z');
const items: ScoreRequest[] = Array.from({ length: 40 }, (_, i) => ({
  subject: `pool-${i}`,
  context: { jurisdiction: i % 2 ? 'DE' : 'US-CA', utilization: (i % 10) / 10, on_time_ratio: 0.95 },
}));
/** What the batch of items `from`..`to` is scored from. */
const batchSource = (from: number, to: number) => ({
  runId: 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0',
  tenantId: 'pool',
  items: items.slice(from, to),
});

/**
 * A thread script that dies on a batch starting at item 0 and answers any other after 200 ms with every
 * item unscored, so that a batch held by a live thread is still pending when another thread dies.
 */
function crashingThread(): URL {
  const file = join(mkdtempSync(join(tmpdir(), 'scoring-pool-')), 'crashing-thread.js');
  writeFileSync(
    file,
    `const { parentPort } = require('node:worker_threads');
    parentPort.on('message', ({ id, from, source }) => {
      if (from === 0) throw new Error('the scoring thread crashed');
      const cids = source.items.map(() => null);
      const scored = { cids, records: [], leafHashes: [], escalated: cids.map(() => 0), events: [], counts: { succeeded: 0, failed: cids.length, escalated: 0 } };
      setTimeout(() => parentPort.postMessage({ id, scored }), 200);
    });`,
  );
  return pathToFileURL(file);
}

/**
 * A batch without what differs between two scorings of the same items: its events' random ids, and its
 * records' salts (fresh for every record) with the CIDs that hash them. The records' other fields stay,
 * the run item's index among them.
 */
const comparable = (batch: ReturnType<typeof scoreBatch>) => ({
  ...batch,
  items: batch.items.map((item) => ({ ...item, log_cid: item.log_cid === null ? null : 'salted' })),
  logRecords: batch.logRecords.map((row) => {
    const { salt, ...record } = JSON.parse(unpackRecord(row.bytes as Uint8Array).toString());
    expect(salt).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(row.leaf_hash as Uint8Array)).toEqual(
      recordLeafHash(unpackRecord(row.bytes as Uint8Array)),
    );
    return { ...row, cid: 'salted', bytes: record, leaf_hash: 'salted' };
  }),
  events: batch.events.map((event) => ({ ...JSON.parse(event.payload).data, log_cid: 'salted' })),
});

describe('the scoring pool', () => {
  const pool = new ScoringPool(existsSync(BUILT_THREAD) ? 2 : 0, BUILT_THREAD);
  afterAll(() => pool.close());

  it('when batches are scored on threads, then they equal the in-process scoring, at the run’s item positions', async () => {
    expect(pool.size).toBe(2);
    const [first, second] = await Promise.all([
      pool.score(batchSource(0, 15), 0, NOW),
      pool.score(batchSource(15, 40), 15, NOW),
    ]);
    expect(comparable(first as never)).toEqual(comparable(scoreBatch(batchSource(0, 15), 0, NOW)));
    expect(comparable(second as never)).toEqual(comparable(scoreBatch(batchSource(15, 40), 15, NOW)));
    expect(second?.items.map((item) => item.item_index)).toEqual([...Array(25).keys()].map((i) => i + 15));
  });

  it('when it has no threads, then it scores in process', async () => {
    const inProcess = new ScoringPool(0);
    const batch = await inProcess.score(batchSource(5, 10), 5, NOW);
    expect(batch.items.map((item) => item.subject)).toEqual(items.slice(5, 10).map((item) => item.subject));
  });

  it('when a thread dies, then only its batches fail, and the pool scores on without it', async () => {
    const crashing = new ScoringPool(2, crashingThread());
    try {
      const [dying, living] = await Promise.allSettled([
        crashing.score(batchSource(0, 5), 0, NOW),
        crashing.score(batchSource(5, 10), 5, NOW),
      ]);
      expect(dying).toMatchObject({ status: 'rejected', reason: { message: 'the scoring thread crashed' } });
      expect(living).toMatchObject({ status: 'fulfilled', value: { logRecords: [] } });
      const living5 = (living as PromiseFulfilledResult<Awaited<ReturnType<ScoringPool['score']>>>).value;
      expect(living5.items.map((item) => [item.item_index, item.status])).toEqual(
        [5, 6, 7, 8, 9].map((index) => [index, 'error']),
      );
      expect(crashing.size).toBe(1);

      // The last thread dies too: the next batches are scored in process.
      await expect(crashing.score(batchSource(0, 5), 0, NOW)).rejects.toThrow('the scoring thread crashed');
      expect(crashing.size).toBe(0);
      const batch = await crashing.score(batchSource(0, 5), 0, NOW);
      expect(batch.items.map((item) => item.subject)).toEqual(items.slice(0, 5).map((item) => item.subject));
    } finally {
      await crashing.close();
    }
  });

  it('when a thread answers something that is not a scored batch, then only that batch fails', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'scoring-pool-')), 'garbled-thread.js');
    writeFileSync(
      file,
      `const { parentPort } = require('node:worker_threads');
      parentPort.on('message', ({ id }) => parentPort.postMessage({ id, scored: null }));`,
    );
    const garbled = new ScoringPool(1, pathToFileURL(file));
    try {
      await expect(garbled.score(batchSource(0, 5), 0, NOW)).rejects.toThrow(TypeError);
      expect(garbled.size).toBe(1);
    } finally {
      await garbled.close();
    }
  });

  it('when the thread script does not exist, then it scores in process', async () => {
    const missing = new ScoringPool(2, new URL('./no-such-scoring-thread.js', import.meta.url));
    expect(missing.size).toBe(0);
    const batch = await missing.score(batchSource(5, 10), 5, NOW);
    expect(batch.items.map((item) => item.subject)).toEqual(items.slice(5, 10).map((item) => item.subject));
  });
});
