import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  API_KEY,
  BASE_URL,
  jsonResponse,
  problemResponse,
  recordingSleep,
  scriptedFetch,
} from '../test/scripted-fetch.js';
import type { Erasure } from './api-types.js';
import { createClient } from './client-factory.js';
import {
  eraseSubject,
  getErasure,
  listErasedLogCids,
  listSubjectRecords,
  waitForErasure,
} from './erasure-calls.js';
import type { Problem } from './problem-guard.js';

const ERASURE_ID = 'era_01JZ4VB2C4D6E8F0G2H4J6K8M0';
const CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku';
const erasure = (status: Erasure['status']): Erasure => ({
  id: ERASURE_ID,
  kind: 'subject',
  status,
  created_at: '2026-11-22T10:00:00.000Z',
  completed_at: status === 'completed' ? '2026-11-22T10:00:01.000Z' : null,
  counts: {
    log_records: status === 'completed' ? 1 : 0,
    run_items: 0,
    run_inputs: 0,
    events: 0,
    delivery_attempts: 0,
    idempotency_answers: 0,
  },
  log_cids: status === 'completed' ? [CID] : [],
  log_cids_has_more: false,
});
const clientWith = (fetch: (request: Request) => Promise<Response>) =>
  createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });

describe('eraseSubject', () => {
  it('posts the subject in the body (never the URL) with the Idempotency-Key, and answers the erasure', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(erasure('pending'), 202));
    const result = await eraseSubject(clientWith(fetch), 'applicant-42', { idempotencyKey: 'gdpr-7' });
    expect(result.data).toEqual(erasure('pending'));
    expect(sent[0]?.method).toBe('POST');
    expect(sent[0]?.url).toBe(`${BASE_URL}/v1/erasures`);
    expect(sent[0]?.headers.get('Idempotency-Key')).toBe('gdpr-7');
    expect(JSON.parse(sent[0]?.body ?? '')).toEqual({ subject: 'applicant-42' });
  });

  it('answers a refusal as error', async () => {
    const { fetch } = scriptedFetch(problemResponse(400, 'validation_failed'));
    expect((await eraseSubject(clientWith(fetch), '')).error?.code).toBe('validation_failed');
  });

  it('narrows data by a check of error (the README example), so error is never empty', async () => {
    const { fetch } = scriptedFetch(
      jsonResponse(erasure('pending'), 202),
      new Response(null, { status: 502, statusText: 'Bad Gateway' }),
    );
    const accepted = await eraseSubject(clientWith(fetch), 'applicant-42');
    if (accepted.error) throw new Error(accepted.error.detail);
    expectTypeOf(accepted.data).toEqualTypeOf<Erasure>();
    expect(accepted.data.id).toBe(ERASURE_ID);
    // A proxy's empty 502 still answers a problem, made from its status.
    const failed = await eraseSubject(clientWith(fetch), 'applicant-42');
    expect(failed.data).toBeUndefined();
    expect(failed.error).toMatchObject({ status: 502, code: 'internal_error', title: 'Bad Gateway' });
    if (!failed.data) expectTypeOf(failed.error).toEqualTypeOf<Problem>();
  });
});

describe('getErasure and waitForErasure', () => {
  it('reads an erasure by id', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(erasure('pending')));
    expect((await getErasure(clientWith(fetch), ERASURE_ID)).data?.status).toBe('pending');
    expect(sent[0]?.url).toBe(`${BASE_URL}/v1/erasures/${ERASURE_ID}`);
  });

  it('polls until the erasure has completed, waiting longer each time, honouring Retry-After', async () => {
    const { fetch, sent } = scriptedFetch(
      jsonResponse(erasure('pending')),
      problemResponse(429, 'rate_limited', { 'Retry-After': '3' }),
      jsonResponse(erasure('pending')),
      jsonResponse(erasure('completed')),
    );
    const { sleep, waits } = recordingSleep();
    const result = await waitForErasure(clientWith(fetch), ERASURE_ID, { sleep, random: () => 0 });
    expect(result.data?.log_cids).toEqual([CID]);
    expect(sent).toHaveLength(4);
    expect(waits).toEqual([250, 3000, 1000]);
  });

  it("answers an unknown (or another tenant's) erasure, 404, as error at once", async () => {
    const { fetch, sent } = scriptedFetch(problemResponse(404, 'not_found'));
    expect((await waitForErasure(clientWith(fetch), ERASURE_ID)).error?.code).toBe('not_found');
    expect(sent).toHaveLength(1);
  });
});

describe('listSubjectRecords', () => {
  it('follows next_cursor with the subject in every body, and answers every record', async () => {
    const record = (i: number) => ({
      log_cid: `${CID.slice(0, -1)}${i}`,
      kind: 'score',
      scored_at: '2026-11-22T10:00:00.000Z',
    });
    const { fetch, sent } = scriptedFetch(
      jsonResponse({ data: [record(1), record(2)], next_cursor: 'Y3Vyc29y' }),
      jsonResponse({ data: [record(3)], next_cursor: null }),
    );
    const result = await listSubjectRecords(clientWith(fetch), 'applicant-42', { limit: 2 });
    expect(result.data).toEqual([record(1), record(2), record(3)]);
    expect(sent.map((request) => request.url)).toEqual(Array(2).fill(`${BASE_URL}/v1/subjects/records`));
    expect(sent.map((request) => JSON.parse(request.body ?? ''))).toEqual([
      { subject: 'applicant-42', limit: 2 },
      { subject: 'applicant-42', limit: 2, cursor: 'Y3Vyc29y' },
    ]);
  });
});

describe('listErasedLogCids', () => {
  it('follows next_cursor with the limit asked for, and answers every CID in order', async () => {
    const cid = (i: number) => `${CID.slice(0, -1)}${i}`;
    const { fetch, sent } = scriptedFetch(
      jsonResponse({ data: [cid(1), cid(2)], next_cursor: 'Y3Vyc29y' }),
      jsonResponse({ data: [cid(3)], next_cursor: null }),
    );
    const result = await listErasedLogCids(clientWith(fetch), ERASURE_ID, { limit: 2 });
    expect(result.data).toEqual([cid(1), cid(2), cid(3)]);
    expect(sent.map((request) => request.url)).toEqual([
      `${BASE_URL}/v1/erasures/${ERASURE_ID}/log-cids?limit=2`,
      `${BASE_URL}/v1/erasures/${ERASURE_ID}/log-cids?limit=2&cursor=Y3Vyc29y`,
    ]);
  });

  it("answers the server's problem, such as 404 for another tenant's erasure", async () => {
    const { fetch } = scriptedFetch(problemResponse(404, 'not_found'));
    const result = await listErasedLogCids(clientWith(fetch), ERASURE_ID);
    expect(result.data).toBeUndefined();
    expect(result.error?.code).toBe('not_found');
    expect(result.response.status).toBe(404);
  });
});
