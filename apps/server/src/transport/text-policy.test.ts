import { randomUUID } from 'node:crypto';
import type { Problem } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { loadContract } from '../common/contract.js';
import { contractOperations } from '../http/contract-routes.js';
import {
  collectTextViolations,
  hasTextViolation,
  integerQueryParameters,
  textPolicyViolation,
} from './text-policy.js';

it("finds the integer query parameters, whose schema is inline or a $ref (the log's tree sizes)", () => {
  const { document } = loadContract();
  const names = integerQueryParameters(contractOperations(document), document.components);
  // `tree_size`, `from` and `to` are `$ref: TreeSize`: missed, `tree_size=0x10` was read as 16.
  expect([...names].sort()).toEqual(['from', 'limit', 'to', 'tree_size', 'width']);
});

const CONTEXT = { jurisdiction: 'DE', utilization: 0.35 };
const URL_A = 'http://127.0.0.1:9/a';

it('names NUL and lone surrogates, and lets every other scalar value through', () => {
  expect(textPolicyViolation('plain \uffff \u200f 😀 \ud83d\ude00')).toBeUndefined();
  expect(textPolicyViolation('a\u0000')).toMatch(/U\+0000/);
  expect(textPolicyViolation('a\ud800')).toMatch(/lone surrogate \(U\+D800\) at index 1/);
  expect(textPolicyViolation('\udc00b')).toMatch(/U\+DC00/);
  const errors: { path: string; message: string }[] = [];
  collectTextViolations({ a: ['ok', 'x\u0000'], 'k/\ud800': 1 }, '/body', errors);
  expect(errors.map((e) => e.path).sort()).toEqual(['/body/a/1', '/body/k~1\ufffd']);
});

it('tells whether a body breaks the policy anywhere, in a string or a key, at any depth', () => {
  const items = Array.from({ length: 1000 }, (_, i) => ({
    subject: `s-${i}`,
    context: { jurisdiction: 'DE' },
  }));
  expect(hasTextViolation({ items })).toBe(false);
  expect(hasTextViolation([1, null, true, 'plain \uffff 😀', { a: [] }])).toBe(false);
  expect(hasTextViolation('x\u0000')).toBe(true);
  const deep = structuredClone(items);
  (deep[999] as { context: Record<string, unknown> }).context['bad\ud800'] = 1;
  expect(hasTextViolation({ items: deep })).toBe(true);
  const errors: { path: string; message: string }[] = [];
  collectTextViolations({ items: deep }, '/body', errors);
  expect(errors.map((e) => e.path)).toEqual(['/body/items/999/context/bad\ufffd']);
  const inArray = structuredClone(items);
  (inArray[3] as { subject: string }).subject = '\udc00';
  expect(hasTextViolation({ items: inArray })).toBe(true);
});

forEachDatabase('the text policy at the edge', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('text-policy'));
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  const expectFieldRefused = async (response: Response, path: string) => {
    const text = await response.text();
    expect(response.status, text).toBe(400);
    const problem = JSON.parse(text) as Problem;
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors?.map((e) => e.path)).toContain(path);
  };

  // Defect #2: a lone surrogate answered 500 (canonicalize threw), or ended a run's item internal_error.
  it('refuses a lone surrogate in a scoring with 400 naming the field', async () => {
    const response = await server.request('/v1/scoring/score', {
      key,
      body: { subject: 'a\ud800', context: CONTEXT },
    });
    await expectFieldRefused(response, '/body/subject');
  });

  it('refuses a run with a bad item (with and without an Idempotency-Key), naming the item', async () => {
    const body = {
      items: [
        { subject: 'fine', context: CONTEXT },
        { subject: 'b\udfff', context: CONTEXT },
      ],
    };
    await expectFieldRefused(
      await server.request('/v1/scoring/runs', { key, body }),
      '/body/items/1/subject',
    );
    const keyed = await server.request('/v1/scoring/runs', {
      key,
      body,
      headers: { 'idempotency-key': randomUUID() },
    });
    await expectFieldRefused(keyed, '/body/items/1/subject');
  });

  it('refuses a lone surrogate in a registration with an Idempotency-Key', async () => {
    const response = await server.request('/v1/webhooks/register', {
      key,
      body: { url: URL_A, events: ['*'], description: '\ud800' },
      headers: { 'idempotency-key': randomUUID() },
    });
    await expectFieldRefused(response, '/body/description');
  });

  // Defect #3: NUL in a description answered 500 on PostgreSQL and 201 on SQLite.
  it('refuses NUL in a webhook description on register and PATCH, the same on both databases', async () => {
    const register = await server.request('/v1/webhooks/register', {
      key,
      body: { url: URL_A, events: ['*'], description: 'a\u0000b' },
    });
    await expectFieldRefused(register, '/body/description');
    const created = await server.request('/v1/webhooks/register', {
      key,
      body: { url: URL_A, events: ['*'] },
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const patch = await server.request(`/v1/webhooks/${id}`, {
      key,
      method: 'PATCH',
      body: { description: '\u0000' },
    });
    await expectFieldRefused(patch, '/body/description');
  });

  it('refuses NUL in a context key, naming it', async () => {
    const response = await server.request('/v1/scoring/score', {
      key,
      body: { subject: 's', context: { ...CONTEXT, 'x\u0000': 1 } },
    });
    await expectFieldRefused(response, '/body/context/x\ufffd');
  });

  it('accepts U+FFFF, RTL marks and astral characters', async () => {
    const response = await server.request('/v1/scoring/score', {
      key,
      body: { subject: '\uffff\u200f\u202e😀', context: CONTEXT },
    });
    expect(response.status, await response.clone().text()).toBe(200);
  });

  // Defect #9: invalid UTF-8 was replaced by U+FFFD and accepted; limit=0x10 was read as 16.
  it('refuses a body that is not valid UTF-8', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"subject":"a'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from(`","context":${JSON.stringify(CONTEXT)}}`),
    ]);
    const response = await fetch(`${server.url}/v1/scoring/score`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: bytes,
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as Problem).detail).toMatch(/UTF-8/);
  });

  it('reads query integers as decimal only', async () => {
    for (const limit of ['0x10', '1e1', '+5', ' 5', '0b11']) {
      const response = await server.request(`/v1/webhooks?limit=${encodeURIComponent(limit)}`, { key });
      await expectFieldRefused(response, '/query/limit');
    }
    expect((await server.request('/v1/webhooks?limit=16', { key })).status).toBe(200);
  });

  // Found by the contract fuzzer and by review: from, to and tree_size share the `TreeSize` schema by `$ref`,
  // so `from=0x10` was read as 16 and `tree_size=1e3` as 1000; a tile's `index=0x1` in the path as 1.
  it("reads the log's tree sizes and tile coordinates as decimal only", async () => {
    const cid = `bafkrei${'a'.repeat(52)}`;
    for (const bad of ['0x10', '1e1', '1e3', '+1', ' 5', '1.0', '5.0', '0b1']) {
      const size = encodeURIComponent(bad);
      await expectFieldRefused(
        await server.request(`/v1/log/proofs/consistency?from=${size}&to=4`, { key }),
        '/query/from',
      );
      await expectFieldRefused(
        await server.request(`/v1/log/proofs/consistency?from=1&to=${size}`, { key }),
        '/query/to',
      );
      await expectFieldRefused(
        await server.request(`/v1/log/proofs/inclusion/${cid}?tree_size=${size}`, { key }),
        '/query/tree_size',
      );
      await expectFieldRefused(await server.request(`/v1/log/tiles/0/${size}`, { key }), '/path/index');
      await expectFieldRefused(await server.request(`/v1/log/tiles/${size}/0`, { key }), '/path/level');
    }
    // Decimal sizes reach the log (this tenant's is empty: no checkpoint, no tile).
    const decimal = await server.request('/v1/log/proofs/consistency?from=1&to=4', { key });
    expect(decimal.status).toBe(404);
    expect(((await decimal.json()) as Problem).code).toBe('checkpoint_not_found');
    expect((await server.request('/v1/log/tiles/0/0', { key })).status).toBe(404);
  });
});
