import type { Problem } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

const ITEM = { subject: 'checks-0', context: { jurisdiction: 'DE', utilization: 0.3 } };

/** The parts of an answer compared between the two forms. */
async function summary(response: Response) {
  const body = (await response.json()) as Problem;
  return {
    status: response.status,
    code: body.code,
    errors: (body.errors ?? []).map((error) => ({ path: error.path, message: error.message })),
  };
}

// Review: the NDJSON form of POST /v1/scoring/runs skipped the contract's header and query validation: a
// 5,000-character Idempotency-Key was stored, `?bogus=1&deadline_seconds=abc` accepted.
forEachDatabase('headers and query of a run as JSON and as NDJSON', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create('run-checks'));
  });
  afterAll(() => server.close());

  const post = (form: 'json' | 'ndjson', query: string, headers: Record<string, string>) =>
    fetch(`${server.url}/v1/scoring/runs${query}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': form === 'json' ? 'application/json' : 'application/x-ndjson',
        ...headers,
      },
      body: form === 'json' ? JSON.stringify({ items: [ITEM] }) : `${JSON.stringify(ITEM)}\n`,
    });
  const idempotencyRows = async () =>
    Number(
      (
        await storage()
          .db.selectFrom('idempotency_keys')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('refuses each bad header and query as the JSON form does: same status, code and errors, nothing stored', async () => {
    const cases: [string, Record<string, string>][] = [
      ['', { 'idempotency-key': 'k'.repeat(300) }],
      ['', { 'idempotency-key': 'k'.repeat(5000) }],
      ['', { 'idempotency-key': 'é' }],
      ['', { 'idempotency-key': 'a b' }],
      ['?bogus=1&deadline_seconds=abc', {}],
      ['?bogus=1', { 'idempotency-key': 'a b' }],
    ];
    const before = await idempotencyRows();
    for (const [query, headers] of cases) {
      const label = `${query} ${JSON.stringify(headers).slice(0, 60)}`;
      const json = await summary(await post('json', query, headers));
      const ndjson = await summary(await post('ndjson', query, headers));
      expect(json.status, label).toBe(400);
      expect(json.code, label).toBe('validation_failed');
      expect(json.errors.length, label).toBeGreaterThan(0);
      expect(ndjson, label).toEqual(json);
    }
    expect(await idempotencyRows()).toBe(before);
    // A valid key still goes through on both forms.
    for (const form of ['json', 'ndjson'] as const)
      expect((await post(form, '', { 'idempotency-key': `ok-${form}` })).status, form).toBe(202);
  });
});
