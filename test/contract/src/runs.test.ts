import {
  createClient,
  fetchRunResults,
  type Run,
  type RunItemResult,
  type ScoreRequest,
  type ScoringClient,
  submitRun,
  waitForRun,
} from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from './harness/contract-calls.js';
import { clientOf, rawBody } from './harness/contract-client.js';
import {
  type ContractOperation,
  expectDocumentedResponse,
  requestExample,
} from './harness/contract-validator.js';
import { type DocumentedAnswer, preferHeader } from './harness/documented-answer.js';
import { expectedScoring, expectServedRecord } from './harness/expected-scoring.js';
import { startTarget, type Target } from './harness/targets.js';

const CREATE = { path: '/v1/scoring/runs', method: 'post' } as const satisfies ContractOperation;
const GET = { path: '/v1/scoring/runs/{id}', method: 'get' } as const satisfies ContractOperation;
const RESULTS = { path: '/v1/scoring/runs/{id}/results', method: 'get' } as const satisfies ContractOperation;
const TWO_ITEMS = requestExample(CREATE, 'TwoItems') as { items: ScoreRequest[]; deadline_seconds: number };
const INVALID = { status: 400, example: 'ValidationFailed' };
const UNKNOWN_RUN = 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0';
const RUN_ID = /^run_[0-9A-HJKMNP-TV-Z]{26}$/;

let target: Target;
let client: ScoringClient;
beforeAll(async () => {
  target = await startTarget();
  client = clientOf(target);
});
afterAll(() => target?.stop());

/** `POST /v1/scoring/runs`, asking Prism for `answer`, checked against the contract. */
async function createRun(body: unknown, answer: DocumentedAnswer, headers: Record<string, string> = {}) {
  const result = await client.POST('/v1/scoring/runs', {
    ...(typeof body === 'string' ? rawBody(body) : { body: body as { items: ScoreRequest[] } }),
    headers: { ...preferHeader(answer), ...headers },
  });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(CREATE, result.response, result.data ?? result.error);
  return result;
}

/** `GET /v1/scoring/runs/{id}` as `key`'s tenant, asking Prism for `answer`, checked against the contract. */
async function getRun(id: string, answer: DocumentedAnswer, as: ScoringClient = client) {
  const result = await as.GET('/v1/scoring/runs/{id}', {
    params: { path: { id } },
    headers: preferHeader(answer),
  });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(GET, result.response, result.data ?? result.error);
  return result;
}

describe('a batch scoring run', () => {
  it('is accepted with 202, a run_ id and its Location, and ends completed with every item scored as a synchronous scoring', async () => {
    const { data, response } = await createRun(TWO_ITEMS, { status: 202, example: 'Queued' });
    const run = data as Run;
    expect(run.id).toMatch(RUN_ID);
    expect(run.status).toBe('queued');
    expect(response.headers.get('Location')).toBe(`/v1/scoring/runs/${run.id}`);
    if (target.kind === 'server') expect(run.item_count).toBe(TWO_ITEMS.items.length);

    // The client's own helpers; Prism is asked for the completed example, the server really completes.
    const following = createClient({
      baseUrl: target.baseUrl,
      apiKey: target.apiKey,
      retries: false,
      headers: preferHeader({ status: 200, example: 'Completed' }),
    });
    const ended = await waitForRun(following, run.id, {
      initialDelayMs: 20,
      signal: AbortSignal.timeout(20_000),
    });
    expect(ended.data?.status).toBe('completed');
    expectDocumentedResponse(GET, ended.response, ended.data);

    const page = await client.GET('/v1/scoring/runs/{id}/results', {
      params: { path: { id: run.id } },
      headers: preferHeader({ status: 200, example: 'Page' }),
    });
    expectDocumentedResponse(RESULTS, page.response, page.data);
    if (target.kind !== 'server') return;
    expect(ended.data?.counts).toMatchObject({ succeeded: 2, failed: 0 });
    const all = await fetchRunResults(client, run.id, { limit: 1 });
    const items = all.data as RunItemResult[];
    expect(items.map((item) => item.index)).toEqual([0, 1]);
    for (const [index, item] of items.entries()) {
      const request = TWO_ITEMS.items[index] as ScoreRequest;
      // A run item's result is its record's: the golden result, its reasons' statements in English.
      expect({ status: item.status, result: item.result }).toEqual({
        status: 'ok',
        result: expectedScoring(request).response.result,
      });
      const log = await client.GET('/v1/logs/{cid}', {
        params: { path: { cid: item.log_cid } },
        parseAs: 'arrayBuffer',
      });
      const bytes = new Uint8Array(log.data ?? new ArrayBuffer(0));
      const window = { from: ended.data?.started_at ?? '', to: ended.data?.completed_at ?? '' };
      await expectServedRecord(
        bytes,
        item.log_cid,
        request,
        { kind: 'run_item', run_id: run.id, item: index },
        window,
      );
    }
  });

  it('is submitted with the client helper and an Idempotency-Key, which replays the same run', async () => {
    const key = `contract-${Date.now()}`;
    const headers = preferHeader({ status: 202, example: 'Queued' });
    const submitting = createClient({
      baseUrl: target.baseUrl,
      apiKey: target.apiKey,
      retries: false,
      headers,
    });
    const first = await submitRun(submitting, TWO_ITEMS, { idempotencyKey: key });
    const again = await submitRun(submitting, TWO_ITEMS, { idempotencyKey: key });
    expectDocumentedResponse(CREATE, again.response, again.data);
    expect(again.data?.id).toBe(first.data?.id);
    if (target.kind === 'server') expect(again.response.headers.get('Idempotent-Replayed')).toBe('true');

    const other = { items: [TWO_ITEMS.items[0] as ScoreRequest] };
    const { error } = await createRun(
      other,
      { status: 422, example: 'IdempotencyKeyReused' },
      { 'Idempotency-Key': key },
    );
    expectProblem(target, error, { code: 'idempotency_key_reused', instance: '/v1/scoring/runs' });
  });
});

describe('a run request is refused', () => {
  it('with 400 validation_failed naming /body/items for no items and for 1,001 items', async () => {
    for (const count of [0, 1001]) {
      const items = Array.from({ length: count }, () => TWO_ITEMS.items[1]);
      const { error } = await createRun({ items }, INVALID);
      expectProblem(target, error, { code: 'validation_failed', paths: ['/body/items'] });
    }
  });

  it("with 400 validation_failed naming the bad item's index and field", async () => {
    const items = [
      TWO_ITEMS.items[0],
      { subject: 'applicant-2', context: { jurisdiction: 'DE', utilisation: 0.3 } },
    ];
    const { error } = await createRun({ items }, INVALID);
    expectProblem(target, error, { code: 'validation_failed', paths: ['/body/items/1/context/utilisation'] });
  });

  it('with 400 validation_failed, not idempotency_key_reused, when a number is a string', async () => {
    const items = [{ subject: 'applicant-3', context: { jurisdiction: 'DE', utilization: 'high' } }];
    const { error } = await createRun({ items }, INVALID, { 'Idempotency-Key': 'invalid-run-1' });
    expectProblem(target, error, { code: 'validation_failed', paths: ['/body/items/0/context/utilization'] });
  });

  it('with 400 validation_failed naming the header when the Idempotency-Key is empty', async () => {
    // What `-H "Idempotency-Key: $(uuidgen)"` sends where uuidgen is missing (from a client that keeps it).
    const { error } = await createRun(TWO_ITEMS, INVALID, { 'Idempotency-Key': '' });
    expectProblem(target, error, { code: 'validation_failed', paths: ['/headers/idempotency-key'] });
  });

  it('with 404 not_found for an unknown run, and for its results', async () => {
    const { error } = await getRun(UNKNOWN_RUN, { status: 404, example: 'NotFound' });
    expectProblem(target, error, { code: 'not_found', instance: `/v1/scoring/runs/${UNKNOWN_RUN}` });
    const results = await client.GET('/v1/scoring/runs/{id}/results', {
      params: { path: { id: UNKNOWN_RUN } },
      headers: preferHeader({ status: 404, example: 'NotFound' }),
    });
    expectDocumentedResponse(RESULTS, results.response, results.error);
    expect(results.error?.code).toBe('not_found');
  });

  it("with 404 not_found for another tenant's run, as if it did not exist", async () => {
    const { data } = await createRun(TWO_ITEMS, { status: 202, example: 'Queued' });
    const other = clientOf(target, { apiKey: target.otherTenantKey });
    const { error } = await getRun(data?.id ?? UNKNOWN_RUN, { status: 404, example: 'NotFound' }, other);
    expectProblem(target, error, { code: 'not_found', instance: `/v1/scoring/runs/${data?.id}` });
  });

  it('with 400 validation_failed naming /query/cursor for a cursor it did not make', async () => {
    const { data } = await createRun(TWO_ITEMS, { status: 202, example: 'Queued' });
    const result = await client.GET('/v1/scoring/runs/{id}/results', {
      params: { path: { id: data?.id ?? UNKNOWN_RUN }, query: { cursor: 'bm90LWEtY3Vyc29y' } },
      headers: preferHeader({ status: 400, example: 'InvalidParameter' }),
    });
    expectDocumentedResponse(RESULTS, result.response, result.error);
    // Only the server knows which cursors it made: the mock answers the documented example asked for.
    const paths = target.kind === 'server' ? ['/query/cursor'] : undefined;
    expectProblem(target, result.error, { code: 'validation_failed', ...(paths && { paths }) });
  });
});

describe('a run submitted as NDJSON', () => {
  it('is accepted with 202 from the documented lines, and its results read as NDJSON, one documented item a line', async () => {
    const lines = requestExample(CREATE, 'TwoLines', 'application/x-ndjson') as string;
    const { data, response } = await client.POST('/v1/scoring/runs', {
      ...rawBody(lines),
      headers: {
        ...preferHeader({ status: 202, example: 'Queued' }),
        'Content-Type': 'application/x-ndjson',
      },
    });
    expect(response.status).toBe(202);
    expectDocumentedResponse(CREATE, response, data);
    const run = data as Run;
    if (target.kind === 'server') expect(run.item_count).toBe(2);
    const following = createClient({
      baseUrl: target.baseUrl,
      apiKey: target.apiKey,
      retries: false,
      headers: preferHeader({ status: 200, example: 'Completed' }),
    });
    await waitForRun(following, run.id, { initialDelayMs: 20, signal: AbortSignal.timeout(20_000) });
    const results = await fetch(`${target.baseUrl}/v1/scoring/runs/${run.id}/results`, {
      headers: {
        authorization: `Bearer ${target.apiKey}`,
        accept: 'application/x-ndjson',
        ...preferHeader({ status: 200, example: 'Lines' }),
      },
    });
    expect(results.status).toBe(200);
    expect(results.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const text = await results.text();
    expectDocumentedResponse(RESULTS, results, text);
    const items = text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { index: number });
    expect(items).toHaveLength(2);
    // Each line is an item as a page documents it.
    const asPage = new Headers(results.headers);
    asPage.set('content-type', 'application/json');
    expectDocumentedResponse(RESULTS, new Response(null, { status: 200, headers: asPage }), {
      data: items,
      next_cursor: null,
    });
    if (target.kind === 'server') expect(items.map((item) => item.index)).toEqual([0, 1]);
  });
});
