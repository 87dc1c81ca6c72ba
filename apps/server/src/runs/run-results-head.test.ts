import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { exchange } from '../../test/support/raw-http.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { newId } from '../common/ids.js';
import type { Storage } from '../storage/storage.js';

/** `storage` whose queries reading `run_items` (a page of a run's results each) are counted in `reads`. */
function countingResultReads(storage: Storage): { storage: Storage; reads: { count: number } } {
  const reads = { count: 0 };
  const plugin: KyselyPlugin = {
    transformQuery({ node }) {
      const froms = (node as { from?: { froms: { table?: { identifier?: { name?: string } } }[] } }).from
        ?.froms;
      if (
        node.kind === 'SelectQueryNode' &&
        froms?.some((from) => from.table?.identifier?.name === 'run_items')
      )
        reads.count += 1;
      return node;
    },
    async transformResult({ result }) {
      return result;
    },
  };
  return { storage: { ...storage, db: storage.db.withPlugin(plugin) }, reads };
}

// Review: HEAD on a run's NDJSON results built and discarded the whole stream (5.9 s and 131 MB for a
// 100,000-item run), delaying other tenants' scorings.
forEachDatabase('HEAD on a run’s NDJSON results', ({ storage }) => {
  let server: TestServer;
  let key: string;
  let reads: { count: number };
  let counted: ReturnType<typeof countingResultReads>;
  beforeAll(async () => {
    counted = countingResultReads(storage());
    reads = counted.reads;
    ({ key } = await testFeatures(counted.storage).keys.create('results-head'));
    server = await startTestServer({ storage: counted.storage });
  });
  afterAll(async () => {
    await server.close();
    // The features wired on the counting view (the database itself is closed by forEachDatabase).
    await testFeatures(counted.storage).close();
  });

  it('answers the stream’s headers without reading a result; GET still streams', async () => {
    const created = await server.request('/v1/scoring/runs', {
      key,
      body: {
        items: [0, 1, 2].map((i) => ({
          subject: `head-${i}`,
          context: { jurisdiction: 'DE', utilization: 0.3 },
        })),
      },
    });
    expect(created.status).toBe(202);
    const { id } = (await created.json()) as { id: string };
    for (const encoding of ['identity', 'gzip']) {
      const headers = {
        authorization: `Bearer ${key}`,
        accept: 'application/x-ndjson',
        'accept-encoding': encoding,
      };
      const url = `${server.url}/v1/scoring/runs/${id}/results`;
      reads.count = 0;
      const head = await exchange(url, 'HEAD', headers);
      expect(head.status).toBe(200);
      expect(head.body.length).toBe(0);
      expect(reads.count).toBe(0);
      const get = await exchange(url, 'GET', headers);
      expect(get.status).toBe(200);
      expect(reads.count).toBeGreaterThan(0);
      for (const name of ['content-type', 'content-encoding', 'vary'])
        expect(head.headers[name], name).toBe(get.headers[name]);
    }
    const unknown = await exchange(`${server.url}/v1/scoring/runs/${newId('run')}/results`, 'HEAD', {
      authorization: `Bearer ${key}`,
      accept: 'application/x-ndjson',
    });
    expect(unknown.status).toBe(404);
  });
});
