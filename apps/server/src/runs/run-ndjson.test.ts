import { mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Problem, Run, RunItemError, RunItemResult, RunResultList } from '@scenario-scoring/api-types';
import { createClient, readRunResults, uploadRunNdjson } from '@scenario-scoring/client';
import { effectivePolicy, scoreScorecard2 } from '@scenario-scoring/engine';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { testRunWorker, waitForRunEnd } from '../../test/support/test-run-worker.js';
import { startTestServer, type TestServer, testConfig } from '../../test/support/test-server.js';
import { newId } from '../common/ids.js';
import { DEFAULT_UPLOAD_LIMITS } from './run-config.js';
import { sweepAbandonedUploads } from './run-upload-sweep.js';
import type { RunWorker } from './run-worker.js';

const NDJSON = { 'content-type': 'application/x-ndjson' };

function line(i: number): string {
  const jurisdictions = ['DE', 'US', 'US-CA', 'FR'];
  return JSON.stringify({
    subject: `nd-${i}`,
    context: { jurisdiction: jurisdictions[i % 4], on_time_ratio: (i % 21) / 20, utilization: (i % 11) / 10 },
  });
}

forEachDatabase('runs submitted as NDJSON', ({ storage }) => {
  let server: TestServer;
  let worker: RunWorker;
  let key: string;
  const limits = { ...DEFAULT_UPLOAD_LIMITS, maxLines: 400, maxBytes: 200_000, maxLineBytes: 1024 };
  beforeAll(async () => {
    worker = testRunWorker(storage(), { config: { batchSize: 50 } });
    worker.start();
    server = await startTestServer({
      storage: storage(),
      workers: [worker],
      config: { runs: { ...testConfig().runs, upload: limits } },
    });
    ({ key } = await testFeatures(storage()).keys.create('ndjson'));
  });
  afterAll(async () => {
    await server.close();
    await worker.stop();
  });

  const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/v1/scoring/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, ...NDJSON, ...headers },
      body,
    });
  const runRows = async () =>
    Number(
      (
        await storage()
          .db.selectFrom('runs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const inputRows = async () =>
    Number(
      (
        await storage()
          .db.selectFrom('run_inputs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('when some lines are not valid items, then the run completes: those items fail naming their line and problem, the others are scored; the results stream as NDJSON, resumable and gzipped', async () => {
    const lines = Array.from({ length: 120 }, (_, i) => line(i));
    lines[3] = '{"subject": "nd-3", "context": '; // not JSON
    lines[10] = ''; // empty
    lines[20] = JSON.stringify({ subject: 'nd-20', context: { jurisdiction: 'DE', utilization: 'high' } });
    lines[30] = JSON.stringify({ subject: 'x'.repeat(300), context: { jurisdiction: 'DE' } });
    lines[40] = `${JSON.stringify({ subject: 'nd-40', context: { jurisdiction: 'DE' } })}\r`; // CRLF: valid
    lines[50] = JSON.stringify({ subject: 'nd-50', context: { jurisdiction: 'DE', note: 'y'.repeat(2000) } });
    lines[60] = '[1, 2]';
    // The rules of a JSON body hold for a line: a member named twice, a lone surrogate.
    lines[70] = '{"subject":"nd-70","subject":"other","context":{"jurisdiction":"DE"}}';
    lines[80] = '{"subject":"nd-80\\ud800","context":{"jurisdiction":"DE"}}';
    // Not JSON around a subject: the item's problem says where, never what (V8's message quotes the text).
    lines[90] = '{"subject":JaneSECRETDoe,"context":{"jurisdiction":"DE"}}';
    const failing = new Map([
      [3, 'malformed_json'],
      [10, 'malformed_json'],
      [20, 'validation_failed'],
      [30, 'validation_failed'],
      [50, 'payload_too_large'],
      [60, 'validation_failed'],
      [70, 'malformed_json'],
      [80, 'validation_failed'],
      [90, 'malformed_json'],
    ]);
    // No newline after the last line.
    const created = await post(lines.join('\n'));
    expect(created.status).toBe(202);
    const queued = (await created.json()) as Run;
    expect(queued).toMatchObject({ status: 'queued', item_count: 120 });
    expect(queued.progress).toEqual({ attempted: 0, failed: 0, items_per_second: null });

    const run = await waitForRunEnd(server, key, queued.id);
    expect(run).toMatchObject({ status: 'completed', counts: { succeeded: 111, failed: 9 } });
    expect(run.progress.attempted).toBe(120);
    expect(run.progress.failed).toBe(9);
    expect(run.progress.items_per_second).toBeGreaterThan(0);
    // Every line was consumed in the transaction that committed its item.
    expect(await inputRows()).toBe(0);

    const page = (await (
      await server.request(`/v1/scoring/runs/${queued.id}/results?limit=200`, { key })
    ).json()) as RunResultList;
    expect(page.data.map((item) => item.index)).toEqual(lines.map((_, i) => i));
    for (const item of page.data) {
      const code = failing.get(item.index);
      if (code === undefined) {
        expect(item.status).toBe('ok');
        const context = JSON.parse((lines[item.index] as string).trim()).context;
        expect((item as RunItemResult).result.scenarios).toEqual(
          scoreScorecard2(context, effectivePolicy(context.jurisdiction)).scenarios,
        );
        continue;
      }
      const failed = item as RunItemError;
      expect(failed).toMatchObject({ status: 'error', line: item.index + 1, error: { code } });
      expect(failed.error.detail).toContain(`ine ${item.index + 1}`);
    }
    expect((page.data[20] as RunItemError).subject).toBe('nd-20');
    expect((page.data[90] as RunItemError).error.detail).toBe(
      'Line 91 is not JSON: Unexpected character in JSON at position 11 (line 1 column 12)',
    );
    expect((page.data[3] as RunItemError).subject).toBeUndefined();
    expect((page.data[20] as RunItemError).error.errors?.[0]?.path).toBe('/line/21/context/utilization');

    const stream = await server.request(`/v1/scoring/runs/${queued.id}/results`, {
      key,
      headers: { accept: 'application/x-ndjson', 'accept-encoding': 'identity' },
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const text = await stream.text();
    expect(text.endsWith('\n')).toBe(true);
    expect(
      text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(page.data);

    const resumed = await server.request(`/v1/scoring/runs/${queued.id}/results?from=100`, {
      key,
      headers: { accept: 'application/x-ndjson', 'accept-encoding': 'gzip' },
    });
    expect(resumed.headers.get('content-encoding')).toBe('gzip');
    // fetch inflates it.
    const tail = (await resumed.text())
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(tail).toEqual(page.data.slice(100));

    // `from` starts a JSON page too.
    const from = (await (
      await server.request(`/v1/scoring/runs/${queued.id}/results?from=118`, { key })
    ).json()) as RunResultList;
    expect(from.data.map((item) => item.index)).toEqual([118, 119]);
  });

  it('when a line is exactly the longest allowed and ends in CRLF, then it is an item; one byte longer, it fails payload_too_large', async () => {
    const padded = (subject: string, length: number) => {
      const text = JSON.stringify({ subject, context: { jurisdiction: 'DE' } });
      return text + ' '.repeat(length - text.length);
    };
    const body = `${padded('nd-crlf', limits.maxLineBytes)}\r\n${padded('nd-long', limits.maxLineBytes + 1)}\n`;
    const created = await post(body);
    expect(created.status).toBe(202);
    const run = (await created.json()) as Run;
    await waitForRunEnd(server, key, run.id);
    const results = (await (
      await server.request(`/v1/scoring/runs/${run.id}/results`, { key })
    ).json()) as RunResultList;
    expect(results.data.map((item) => item.status)).toEqual(['ok', 'error']);
    expect((results.data[1] as RunItemError).error.code).toBe('payload_too_large');
  });

  // Review: a UTF-8 byte order mark at the start of an NDJSON body failed line 1 as malformed_json, where
  // POST /v1/scoring/score accepts one before its JSON.
  it('when the body starts with a UTF-8 byte order mark, then it is skipped (only there), even split across chunks', async () => {
    const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
    const { port } = new URL(server.url);
    const chunked = (pieces: Buffer[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const sent = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/scoring/runs',
            headers: { authorization: `Bearer ${key}`, ...NDJSON, 'transfer-encoding': 'chunked' },
          },
          (res) => {
            let body = '';
            res.on('data', (chunk) => {
              body += chunk;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        sent.on('error', reject);
        // Each piece its own chunk, a turn apart, so the server reads them one by one.
        (async () => {
          for (const piece of pieces) {
            sent.write(piece);
            await new Promise((wait) => setTimeout(wait, 20));
          }
          sent.end();
        })();
      });
    const text = `${line(1)}\n\ufeff${line(2)}\n${line(3)}\n`;
    for (const pieces of [
      [Buffer.concat([BOM, Buffer.from(text)])],
      [BOM.subarray(0, 1), BOM.subarray(1, 2), Buffer.concat([BOM.subarray(2), Buffer.from(text)])],
    ]) {
      const created = await chunked(pieces);
      expect(created.status, created.body).toBe(202);
      const run = await waitForRunEnd(server, key, (JSON.parse(created.body) as Run).id);
      const results = (await (
        await server.request(`/v1/scoring/runs/${run.id}/results`, { key })
      ).json()) as RunResultList;
      // Line 1 is read after the mark; a mark at the start of another line is that line's, not JSON.
      expect(results.data.map((item) => item.status)).toEqual(['ok', 'error', 'ok']);
      expect((results.data[1] as RunItemError).error.code).toBe('malformed_json');
    }
    // A body of a mark alone has no line, as an empty body.
    const empty = await post(BOM);
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as Problem).code).toBe('validation_failed');
    // As the JSON form: a mark before a scoring's body is accepted.
    const scored = await fetch(`${server.url}/v1/scoring/score`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: Buffer.concat([BOM, Buffer.from(line(4))]),
    });
    expect(scored.status).toBe(200);
  });

  it('when the body is gzip-compressed, then its lines are read inflated', async () => {
    const body = gzipSync(`${[line(1), line(2), line(3)].join('\n')}\n`);
    const created = await post(body, { 'content-encoding': 'gzip' });
    expect(created.status).toBe(202);
    const run = await waitForRunEnd(server, key, ((await created.json()) as Run).id);
    expect(run).toMatchObject({ status: 'completed', item_count: 3, counts: { succeeded: 3, failed: 0 } });
  });

  it('when the body has more lines than the limit, then it is refused 413 and no run exists, nor any of its lines', async () => {
    const before = await runRows();
    const body = `${Array.from({ length: 401 }, (_, i) => line(i)).join('\n')}\n`;
    const refused = await post(body);
    expect(refused.status).toBe(413);
    expect(((await refused.json()) as Problem).code).toBe('payload_too_large');
    expect(await runRows()).toBe(before);
    expect(await inputRows()).toBe(0);
  });

  it('when the body declares more bytes than the limit, then it is refused 413 before it is read', async () => {
    const refused = await post('x'.repeat(200_001));
    expect(refused.status).toBe(413);
    expect(((await refused.json()) as Problem).detail).toContain('200000 bytes');
  });

  it('when the body has no line, or another charset, then it is refused and no run exists', async () => {
    const before = await runRows();
    const empty = await post('');
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as Problem).code).toBe('validation_failed');
    const latin = await post(line(1), { 'content-type': 'application/x-ndjson; charset=latin1' });
    expect(latin.status).toBe(415);
    expect(await runRows()).toBe(before);
  });

  it('when the client goes away mid-upload, then no run exists and its lines are deleted', async () => {
    const before = await runRows();
    const { port } = new URL(server.url);
    const sent = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/scoring/runs',
      headers: { authorization: `Bearer ${key}`, ...NDJSON, 'transfer-encoding': 'chunked' },
    });
    sent.on('error', () => {});
    // More than a batch of lines is written, so that some reached storage.
    sent.write(`${Array.from({ length: 300 }, (_, i) => line(i)).join('\n')}\n`);
    await waitUntil(async () => (await inputRows()) > 0 || (await runRows()) > before, 5000).catch(() => {});
    sent.destroy();
    await waitUntil(async () => (await runRows()) === before && (await inputRows()) === 0, 5000);
  });

  it('when an upload was abandoned by a server that died, then it is invisible, and swept with its lines once its lease passed', async () => {
    const id = newId('run');
    const tenantId = 'ndjson';
    const now = new Date();
    await storage()
      .db.insertInto('runs')
      .values({
        id,
        tenant_id: tenantId,
        status: 'uploading',
        input: 'ndjson',
        item_count: 0,
        items: '[]',
        created_at: now.toISOString(),
        deadline_at: null,
        locked_until: new Date(now.getTime() - 1000).toISOString(),
      })
      .execute();
    await storage()
      .db.insertInto('run_inputs')
      .values({ run_id: id, item_index: 0, subject: 's', item: line(0), error: null })
      .execute();
    expect((await server.request(`/v1/scoring/runs/${id}`, { key })).status).toBe(404);
    expect(await sweepAbandonedUploads(storage(), now)).toBe(1);
    expect(await storage().db.selectFrom('runs').select('id').where('id', '=', id).execute()).toEqual([]);
    expect(await inputRows()).toBe(0);
  });

  it('when an upload is repeated with its Idempotency-Key, then the first run is replayed; another body with that key is refused', async () => {
    const body = `${line(7)}\n${line(8)}\n`;
    const headers = { 'idempotency-key': `nd-${newId('req')}` };
    const first = await post(body, headers);
    expect(first.status).toBe(202);
    const before = await runRows();
    const again = await post(body, headers);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as Run).id).toBe(((await first.json()) as Run).id);
    const other = await post(`${line(9)}\n`, headers);
    expect(other.status).toBe(422);
    expect(await runRows()).toBe(before);
  });

  it('when the client uploads a file with a progress callback, then the run completes and its results read as an async iterator of items', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ndjson-'));
    const file = join(dir, 'portfolio.ndjson');
    writeFileSync(file, `${Array.from({ length: 250 }, (_, i) => line(i)).join('\n')}\n`);
    const client = createClient({ baseUrl: server.url, apiKey: key });
    const seen: { bytes: number; lines: number }[] = [];
    const created = await uploadRunNdjson(client, file, { onProgress: (p) => seen.push(p) });
    expect(created.error).toBeUndefined();
    const run = created.data as Run;
    expect(run.item_count).toBe(250);
    expect(seen.at(-1)?.lines).toBe(250);
    await waitForRunEnd(server, key, run.id);
    const indexes: number[] = [];
    for await (const item of readRunResults(client, run.id, { from: 5 })) {
      expect(item.status).toBe('ok');
      indexes.push(item.index);
    }
    expect(indexes).toEqual(Array.from({ length: 245 }, (_, i) => i + 5));
  });
});
