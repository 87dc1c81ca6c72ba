import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, BASE_URL, jsonResponse, scriptedFetch } from '../test/scripted-fetch.js';
import { createClient } from './client-factory.js';
import { uploadRunNdjson } from './run-ndjson.js';

const RUN = {
  id: 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0',
  status: 'queued',
  item_count: 2,
  created_at: '2026-11-22T10:00:00.000Z',
};
const LINES =
  '{"subject":"a","context":{"jurisdiction":"DE"}}\n{"subject":"b","context":{"jurisdiction":"FR"}}\n';
const clientWith = (fetch: (request: Request) => Promise<Response>) =>
  createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ss-ndjson-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('uploadRunNdjson', () => {
  it('streams a file, by its path, as application/x-ndjson', async () => {
    const path = join(dir, 'portfolio.ndjson');
    await writeFile(path, LINES);
    const { fetch, sent } = scriptedFetch(jsonResponse(RUN, 202));
    const progress: number[] = [];
    const uploaded = await uploadRunNdjson(clientWith(fetch), path, {
      onProgress: ({ lines }) => progress.push(lines),
    });
    expect(uploaded.data?.id).toBe(RUN.id);
    expect(sent[0]?.headers.get('Content-Type')).toBe('application/x-ndjson');
    expect(sent[0]?.body).toBe(LINES);
    expect(progress.at(-1)).toBe(2);
  });

  it('sends NDJSON text given as a stream', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(RUN, 202));
    await uploadRunNdjson(clientWith(fetch), new Blob([LINES]).stream());
    expect(sent[0]?.body).toBe(LINES);
  });

  it('rejects a file that does not exist before any request, naming it, with ENOENT as code and cause', async () => {
    const path = join(dir, 'missing.ndjson');
    const { fetch, sent } = scriptedFetch(jsonResponse(RUN, 202));
    const failure = await uploadRunNdjson(clientWith(fetch), path).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(failure).toMatchObject({ code: 'ENOENT', path, cause: { code: 'ENOENT' } });
    expect((failure as Error).message).toContain(`the NDJSON file ${JSON.stringify(path)}`);
    expect(sent).toEqual([]);
  });

  it('rejects a directory, and says that a string of NDJSON is taken as a path', async () => {
    const { fetch, sent } = scriptedFetch();
    await expect(uploadRunNdjson(clientWith(fetch), dir)).rejects.toMatchObject({ code: 'EISDIR' });
    await expect(uploadRunNdjson(clientWith(fetch), LINES)).rejects.toThrow(
      /new Blob\(\[text\]\)\.stream\(\)/,
    );
    expect(sent).toEqual([]);
  });
});
