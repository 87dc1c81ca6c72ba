import { gzipSync } from 'node:zlib';
import type { Run } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer, testConfig } from '../../test/support/test-server.js';
import { newId } from '../common/ids.js';
import { BackgroundPacer } from '../workers/background-pacer.js';
import { DEFAULT_UPLOAD_LIMITS } from './run-config.js';

const NDJSON = { 'content-type': 'application/x-ndjson' };

/**
 * A gzip body of `mib` MiB of the letter `a` and no newline (members of 16 MiB one after the other, as a
 * gzip may be): 16 KiB a member, so 128 MiB is 130 KB to send, one overlong line.
 */
function inflatingBody(mib: number): Buffer {
  const member = gzipSync(Buffer.alloc(16 * 1024 * 1024, 'a'));
  return Buffer.concat(Array.from({ length: mib / 16 }, () => member));
}

// What an upload’s reading costs other tenants: a body inflating to a hundred MB and more of one overlong
// line (which writes no batch of lines, the only step that was paced) is charged to the background pacer
// as it is read, in short steps, and the bytes the line's bound throws away still count for the
// Idempotency-Key.
forEachDatabase('the pacing of an NDJSON upload’s reading', ({ storage }) => {
  let server: TestServer;
  let key: string;
  /** The pauses the pacer took (ms), each with when it began: they end at once, so the test stays fast. */
  const pauses: { at: number; ms: number }[] = [];
  const pacer = new BackgroundPacer({
    share: 0.5,
    // Clients are waiting on requests for the whole test (noteForeground below).
    quietMs: 3_600_000,
    sleep: async (ms) => {
      pauses.push({ at: performance.now(), ms });
    },
  });
  beforeAll(async () => {
    server = await startTestServer({
      storage: storage(),
      features: { ...testFeatures(storage()), backgroundPacer: pacer },
      config: { runs: { ...testConfig().runs, upload: DEFAULT_UPLOAD_LIMITS } },
    });
    ({ key } = await testFeatures(storage()).keys.create('pacing'));
  });
  afterAll(async () => {
    await server.close();
  });

  const post = (body: Buffer | string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/v1/scoring/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, ...NDJSON, ...headers },
      body,
    });

  it('when a gzip body inflates to 128 MiB of one overlong line while clients wait, then its reading is charged to the pacer in short steps, and the line fails payload_too_large', async () => {
    const body = inflatingBody(128);
    pacer.noteForeground();
    pauses.length = 0;
    const started = performance.now();
    const answer = await post(body, { 'content-encoding': 'gzip' });
    const took = performance.now() - started;
    expect(answer.status).toBe(202);
    const run = (await answer.json()) as Run;
    expect(run.item_count).toBe(1);
    const input = await storage()
      .db.selectFrom('run_inputs')
      .select(['item', 'error'])
      .where('run_id', '=', run.id)
      .executeTakeFirstOrThrow();
    expect(input.item).toBeNull();
    expect(JSON.parse(input.error as string)).toMatchObject({ code: 'payload_too_large' });
    // At a share of one half, each step of reading (inflating in the thread pool, scanning for a newline)
    // earns a pause as long as itself: the pauses add up to most of the reading's time (they end at once
    // here, so that time is the upload's). Unpaced, the only step was the one line's write: one pause of
    // about a millisecond, after all of the reading.
    const paused = pauses.reduce((sum, pause) => sum + pause.ms, 0);
    expect(paused).toBeGreaterThan(took * 0.25);
    expect(pauses.length).toBeGreaterThan(5);
    // No stretch of reading goes unpaced for long: the longest time between two pauses (or before the
    // first) is a small part of the upload (steps of 10 ms; unpaced, it was all of it).
    const at = [started, ...pauses.map((pause) => pause.at)];
    const longest = Math.max(...at.slice(1).map((time, i) => time - (at[i] as number)));
    expect(longest).toBeLessThan(took / 4);
  });

  it('when an upload is repeated with its Idempotency-Key and differs only past an overlong line’s bound, then it is another request: refused 422', async () => {
    const long = 'a'.repeat(DEFAULT_UPLOAD_LIMITS.maxLineBytes + 100);
    const item = JSON.stringify({ subject: 'pacing-1', context: { jurisdiction: 'DE' } });
    const headers = { 'idempotency-key': `pace-${newId('req')}` };
    const first = await post(`${long}\n${item}\n`, headers);
    expect(first.status).toBe(202);
    const again = await post(`${long}\n${item}\n`, headers);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await post(`${long.slice(0, -1)}b\n${item}\n`, headers);
    expect(other.status).toBe(422);
  });
});
