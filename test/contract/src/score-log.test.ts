import { fetchVerifiedLogRecord, type ScoreRequest, type ScoringClient } from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, getLog, postScore, SCORE_OPERATION } from './harness/contract-calls.js';
import { clientOf } from './harness/contract-client.js';
import { requestExample } from './harness/contract-validator.js';
import { preferHeader } from './harness/documented-answer.js';
import { expectServedRecord } from './harness/expected-scoring.js';
import { startTarget, type Target } from './harness/targets.js';

const FULL_FILE = requestExample(SCORE_OPERATION, 'FullFile') as ScoreRequest;
/** A well-formed CID that no scoring logs: the CID of `hello world`. */
const UNKNOWN_CID = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e';

let target: Target;
let client: ScoringClient;
let loggedCid: string;
let requestId: string;
/** When the FullFile scoring was sent and answered: its record's `scored_at` lies between. */
let window: { from: string; to: string } | undefined;
beforeAll(async () => {
  target = await startTarget();
  client = clientOf(target);
  const from = new Date().toISOString();
  const { data } = await postScore(client, { json: FULL_FILE }, { status: 200, example: 'FullFile' });
  window = target.kind === 'server' ? { from, to: new Date().toISOString() } : undefined;
  loggedCid = data?.log_cid ?? '';
  requestId = data?.id ?? '';
});
afterAll(() => target?.stop());

describe('a scoring log record', () => {
  it('is served as the exact bytes its CID names, the canonical score-log/2 record the model page predicts', async () => {
    const { data } = await getLog(client, loggedCid, { status: 200, example: 'FullFile' });
    const bytes = new Uint8Array(data ?? new ArrayBuffer(0));
    await expectServedRecord(bytes, loggedCid, FULL_FILE, { kind: 'score', request_id: requestId }, window);
  });

  it('verifies with the client in one step', async () => {
    const verified = await fetchVerifiedLogRecord(client, loggedCid, {
      headers: preferHeader({ status: 200, example: 'FullFile' }),
    });
    expect(verified.error).toBeUndefined();
    expect(verified.data?.record).toMatchObject({
      schema: 'score-log/2',
      kind: 'score',
      request_id: requestId,
      model_version: 'scorecard-2',
      subject: FULL_FILE.subject,
      context: FULL_FILE.context,
    });
  });

  it('answers an unknown cid with 404 not_found', async () => {
    const { error } = await getLog(client, UNKNOWN_CID, { status: 404, example: 'NotFound' });
    expectProblem(target, error, { code: 'not_found', instance: `/v1/logs/${UNKNOWN_CID}` });
  });

  it("answers another tenant's cid with 404 not_found, as if it did not exist", async () => {
    const other = clientOf(target, { apiKey: target.otherTenantKey });
    const { error } = await getLog(other, loggedCid, { status: 404, example: 'NotFound' });
    expectProblem(target, error, { code: 'not_found', instance: `/v1/logs/${loggedCid}` });
    // The other tenant scoring the same input logs a record of its own, under its own CID (on the server:
    // the mock answers the one example), which it reads.
    const scored = await postScore(other, { json: FULL_FILE }, { status: 200, example: 'FullFile' });
    const ownCid = scored.data?.log_cid ?? '';
    if (target.kind === 'server') expect(ownCid).not.toBe(loggedCid);
    const { data } = await getLog(other, ownCid, { status: 200, example: 'FullFile' });
    const bytes = new Uint8Array(data ?? new ArrayBuffer(0));
    await expectServedRecord(bytes, ownCid, FULL_FILE, { kind: 'score', request_id: scored.data?.id ?? '' });
  });

  it.each([
    'not-a-cid',
    'bafkreiayofhlaqkaph3jjsfs6wjoujxsu665s7ehdjfl443rszjeaj77v',
    'BAFKREIAYOFHLAQKAPH3JJSFS6WJOUJXSU665S7EHDJFL443RSZJEAJ77VU',
    'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG',
  ])('refuses %s, which is not a log CID, with 400 validation_failed naming /path/cid', async (cid) => {
    const { error } = await getLog(client, cid, { status: 400, example: 'InvalidParameter' });
    expectProblem(target, error, {
      code: 'validation_failed',
      paths: ['/path/cid'],
      instance: `/v1/logs/${cid}`,
    });
  });
});

describe('the notice of a scoring', () => {
  it('gives the record’s p50, its range, model and reasons in rank order, marked illustrative', async () => {
    const result = await client.GET('/v1/logs/{cid}/notice', {
      params: { path: { cid: loggedCid } },
      headers: preferHeader({ status: 200, example: 'FullFile' }),
    });
    expect(result.response.status).toBe(200);
    expect(result.data).toMatchObject({
      language: 'en',
      score: 690.7,
      score_range: { min: 0, max: 1000 },
      model_version: 'scorecard-2',
      policy_id: 'DE',
      reasons: [
        { rank: 1, code: 'UT1', statement: 'Too much of the available credit is in use' },
        { rank: 2, code: 'PH1', statement: 'Too few payments were made on time' },
        { rank: 3, code: 'DI1', statement: 'Debt is too high relative to income' },
        { rank: 4, code: 'HL1', statement: 'The credit history is too short' },
      ],
      disclaimer: 'Illustrative wording, not legal advice.',
    });
    // The mock serves the example's record; the server names the record asked for.
    if (target.kind === 'server') expect((result.data as { log_cid?: string }).log_cid).toBe(loggedCid);
  });

  it('answers an unknown cid with 404 not_found', async () => {
    const { error, response } = await client.GET('/v1/logs/{cid}/notice', {
      params: { path: { cid: UNKNOWN_CID } },
      headers: preferHeader({ status: 404, example: 'NotFound' }),
    });
    expect(response.status).toBe(404);
    expect(error).toMatchObject({ code: 'not_found', status: 404 });
  });
});
