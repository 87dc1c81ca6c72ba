import {
  createClient,
  type Erasure,
  type ErasureLogCidList,
  eraseSubject,
  listErasedLogCids,
  listSubjectRecords,
  type ScoreResponse,
  type ScoringClient,
  type SubjectRecordList,
  waitForErasure,
} from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, getLog } from './harness/contract-calls.js';
import { clientOf } from './harness/contract-client.js';
import {
  type ContractOperation,
  expectDocumentedResponse,
  requestExample,
} from './harness/contract-validator.js';
import { type DocumentedAnswer, preferHeader } from './harness/documented-answer.js';
import { startTarget, type Target } from './harness/targets.js';

const CREATE = { path: '/v1/erasures', method: 'post' } as const satisfies ContractOperation;
const GET = { path: '/v1/erasures/{id}', method: 'get' } as const satisfies ContractOperation;
const LIST = { path: '/v1/subjects/records', method: 'post' } as const satisfies ContractOperation;
const LOG_CIDS = { path: '/v1/erasures/{id}/log-cids', method: 'get' } as const satisfies ContractOperation;
const SUBJECT_EXAMPLE = requestExample(CREATE, 'Subject') as { subject: string };
const ERASURE_ID = /^era_[0-9A-HJKMNP-TV-Z]{26}$/;
const UNKNOWN_ERASURE = 'era_01JZ4VB2C4D6E8F0G2H4J6K8M0';

let target: Target;
let client: ScoringClient;
beforeAll(async () => {
  target = await startTarget();
  client = clientOf(target);
});
afterAll(() => target?.stop());

async function createErasure(subject: string, answer: DocumentedAnswer) {
  const result = await client.POST('/v1/erasures', { body: { subject }, headers: preferHeader(answer) });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(CREATE, result.response, result.data ?? result.error);
  return result;
}

async function getErasure(id: string, answer: DocumentedAnswer, as: ScoringClient = client) {
  const result = await as.GET('/v1/erasures/{id}', {
    params: { path: { id } },
    headers: preferHeader(answer),
  });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(GET, result.response, result.data ?? result.error);
  return result;
}

async function listRecords(subject: string, answer: DocumentedAnswer) {
  const result = await client.POST('/v1/subjects/records', {
    body: { subject, limit: 100 },
    headers: preferHeader(answer),
  });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(LIST, result.response, result.data ?? result.error);
  return result;
}

async function listErased(id: string, answer: DocumentedAnswer, as: ScoringClient = client) {
  const result = await as.GET('/v1/erasures/{id}/log-cids', {
    params: { path: { id } },
    headers: preferHeader(answer),
  });
  expect(result.response.status, JSON.stringify(result.error)).toBe(answer.status);
  expectDocumentedResponse(LOG_CIDS, result.response, result.data ?? result.error);
  return result;
}

/** A unique subject per run on the server (its database outlives one test); the example's on the mock. */
const subjectFor = (name: string) =>
  target.kind === 'server' ? `${name}-${Date.now()}` : SUBJECT_EXAMPLE.subject;

describe("access to a subject's records", () => {
  it('lists the records of the subject sent in the body (log_cid, kind, scored_at)', async () => {
    const subject = subjectFor('access');
    const scored: string[] = [];
    if (target.kind === 'server') {
      for (const utilization of [0.2, 0.3]) {
        const { data } = await client.POST('/v1/scoring/score', {
          body: { subject, context: { jurisdiction: 'DE', utilization } },
        });
        scored.push((data as ScoreResponse).log_cid);
      }
    }
    const { data } = await listRecords(subject, { status: 200, example: 'OnePage' });
    const list = data as SubjectRecordList;
    expect(list.data.length).toBeGreaterThan(0);
    for (const record of list.data) expect(['score', 'run_item']).toContain(record.kind);
    if (target.kind !== 'server') return;
    expect(list.data.map((record) => record.log_cid).sort()).toEqual([...scored].sort());
    const helper = await listSubjectRecords(client, subject, { limit: 1 });
    expect(helper.data?.map((record) => record.log_cid).sort()).toEqual([...scored].sort());
  });
});

describe('an erasure by subject', () => {
  it('is accepted with 202, an era_ id and its Location, completes with its counts, and its records answer 410 log_record_erased', async () => {
    const subject = subjectFor('erase');
    let cid: string | undefined;
    if (target.kind === 'server') {
      const { data } = await client.POST('/v1/scoring/score', {
        body: { subject, context: { jurisdiction: 'DE' } },
      });
      cid = (data as ScoreResponse).log_cid;
    }
    const { data, response } = await createErasure(subject, { status: 202, example: 'Pending' });
    const erasure = data as Erasure;
    expect(erasure.id).toMatch(ERASURE_ID);
    expect(erasure.status).toBe('pending');
    expect(response.headers.get('Location')).toBe(`/v1/erasures/${erasure.id}`);
    expect(JSON.stringify(erasure)).not.toContain(subject);

    const following = createClient({
      baseUrl: target.baseUrl,
      apiKey: target.apiKey,
      retries: false,
      headers: preferHeader({ status: 200, example: 'Completed' }),
    });
    const done = await waitForErasure(following, erasure.id, {
      initialDelayMs: 20,
      signal: AbortSignal.timeout(20_000),
    });
    expectDocumentedResponse(GET, done.response, done.data);
    expect(done.data?.status).toBe('completed');
    expect(done.data?.log_cids.length).toBe(done.data?.counts.log_records);
    expect(done.data?.log_cids_has_more).toBe(false);
    const paged = await listErased(erasure.id, { status: 200, example: 'OnePage' });
    expect((paged.data as ErasureLogCidList).next_cursor).toBeNull();
    if (target.kind !== 'server') {
      await getLog(client, done.data?.log_cids[0] as string, { status: 410, example: 'LogRecordErased' });
      return;
    }
    expect(done.data?.id).toBe(erasure.id);
    expect(done.data?.log_cids).toEqual([cid]);
    expect((paged.data as ErasureLogCidList).data).toEqual([cid]);
    expect((await listErasedLogCids(client, erasure.id)).data).toEqual([cid]);
    const erased = await getLog(client, cid as string, { status: 410, example: 'LogRecordErased' });
    expectProblem(target, erased.error, { code: 'log_record_erased', detail: erasure.id });
    const relisted = await listRecords(subject, { status: 200, example: 'OnePage' });
    expect((relisted.data as SubjectRecordList).data).toEqual([]);
  });

  it('is erased by the client helper too, and an erasure of a subject never scored completes with zero counts', async () => {
    if (target.kind !== 'server') return;
    const accepted = await eraseSubject(client, subjectFor('never-scored'), {
      idempotencyKey: `era-${Date.now()}`,
    });
    const done = await waitForErasure(client, accepted.data?.id as string, { initialDelayMs: 20 });
    expect(done.data).toMatchObject({ status: 'completed', log_cids: [] });
    expect(Object.values(done.data?.counts ?? {}).every((count) => count === 0)).toBe(true);
  });

  it("answers 404 not_found for an unknown erasure, and for another tenant's, as if it did not exist", async () => {
    const unknown = await getErasure(UNKNOWN_ERASURE, { status: 404, example: 'NotFound' });
    expectProblem(target, unknown.error, { code: 'not_found' });
    const unknownList = await listErased(UNKNOWN_ERASURE, { status: 404, example: 'NotFound' });
    expectProblem(target, unknownList.error, { code: 'not_found' });
    if (target.kind !== 'server') return;
    const { data } = await createErasure(subjectFor('tenant'), { status: 202, example: 'Pending' });
    const other = clientOf(target, { apiKey: target.otherTenantKey });
    const foreign = await getErasure((data as Erasure).id, { status: 404, example: 'NotFound' }, other);
    expectProblem(target, foreign.error, { code: 'not_found', detail: (data as Erasure).id });
    const foreignList = await listErased((data as Erasure).id, { status: 404, example: 'NotFound' }, other);
    expectProblem(target, foreignList.error, { code: 'not_found', detail: (data as Erasure).id });
  });
});
