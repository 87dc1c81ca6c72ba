import type { paths as ContractPaths, Problem as ContractProblem } from '@scenario-scoring/api-types';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { API_KEY, BASE_URL, jsonResponse, SCORE_RESPONSE } from '../test/scripted-fetch.js';
import type { Erasure, LogRecord, Policy, paths, Run, ScoreResponse } from './api-types.js';
import type { CallResult } from './call-result.js';
import { createClient } from './client-factory.js';
import { type ErasureCallResult, eraseSubject, waitForErasure } from './erasure-calls.js';
import type { Problem, ProblemCode } from './problem-guard.js';
import { getNotice } from './reasons.js';
import { uploadRunNdjson } from './run-ndjson.js';
import { type RunCallResult, submitRun } from './run-polling.js';
import { getPolicy, scoreSubject } from './typed-calls.js';
import { fetchVerifiedLogRecord } from './verified-log-fetch.js';

/** Type tests: `tsc` (npm run typecheck) checks them; running them only proves they are well-formed. */
describe('types', () => {
  const fetch = async () => jsonResponse(SCORE_RESPONSE);
  const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });

  it('copies the contract types unchanged from @scenario-scoring/api-types', () => {
    expectTypeOf<Problem>().toEqualTypeOf<ContractProblem>();
    expectTypeOf<paths>().toEqualTypeOf<ContractPaths>();
    expectTypeOf<ProblemCode>().toEqualTypeOf<ContractProblem['code']>();
    expectTypeOf<ProblemCode>().toExtend<string>();
  });

  it('types the score call: its body, its data and its error', async () => {
    const result = await client.POST('/v1/scoring/score', {
      body: { subject: 'applicant-42', context: { jurisdiction: 'DE', utilization: 0.3 } },
    });
    expectTypeOf(result.data).toEqualTypeOf<ScoreResponse | undefined>();
    expectTypeOf(result.error).toEqualTypeOf<Problem | undefined>();
    if (result.data) {
      expectTypeOf(result.data.result.scenarios[0]).toEqualTypeOf<
        ScoreResponse['result']['scenarios'][number] | undefined
      >();
      expectTypeOf(result.data.log_cid).toBeString();
    } else {
      // Narrowing on data leaves the problem.
      expectTypeOf(result.error).toEqualTypeOf<Problem>();
    }
    expect(result.data?.status).toBe('ok');
  });

  it("types every helper's result as data or error, each check narrowing the other", () => {
    // Compiled, never run: the fake fetch answers every call with a scoring.
    const typesOnly = async () => {
      const score = await scoreSubject(client, { subject: 's', context: { jurisdiction: 'DE' } });
      expectTypeOf(score).toEqualTypeOf<CallResult<ScoreResponse>>();
      expectTypeOf(await getPolicy(client, 'DE')).toEqualTypeOf<CallResult<Policy>>();
      expectTypeOf(await submitRun(client, { items: [] })).toEqualTypeOf<CallResult<Run>>();
      expectTypeOf(await uploadRunNdjson(client, 'items.ndjson')).toEqualTypeOf<CallResult<Run>>();
      expectTypeOf(await getNotice(client, 'b', { format: 'html' })).toEqualTypeOf<CallResult<string>>();
      const erasure = await eraseSubject(client, 's');
      expectTypeOf(erasure).toEqualTypeOf<CallResult<Erasure>>();
      expectTypeOf(await waitForErasure(client, 'era_1')).toEqualTypeOf<CallResult<Erasure>>();
      // The old names stay, as aliases.
      expectTypeOf<RunCallResult<Run>>().toEqualTypeOf<CallResult<Run>>();
      expectTypeOf<ErasureCallResult<Erasure>>().toEqualTypeOf<CallResult<Erasure>>();
      // The README's check: error first, then data without `?.`.
      if (erasure.error) expectTypeOf(erasure.error).toEqualTypeOf<Problem>();
      else expectTypeOf(erasure.data).toEqualTypeOf<Erasure>();
      if (!score.data) expectTypeOf(score.error).toEqualTypeOf<Problem>();
      const verified = await fetchVerifiedLogRecord(client, SCORE_RESPONSE.log_cid);
      if (!verified.error) expectTypeOf(verified.data.bytes).toEqualTypeOf<Uint8Array>();
    };
    expect(typesOnly).toBeTypeOf('function');
  });

  it('refuses calls the contract does not allow', async () => {
    // @ts-expect-error subject is required
    await client.POST('/v1/scoring/score', { body: { context: { jurisdiction: 'DE' } } });
    await client.POST('/v1/scoring/score', {
      body: {
        subject: 's',
        // @ts-expect-error an input has the wrong type
        context: { jurisdiction: 'DE', utilization: 'high' },
      },
    });
    // @ts-expect-error there is no such path
    await client.GET('/v1/scoring/scores');
    // @ts-expect-error the path parameter is required
    await client.GET('/v1/scoring/policies/{jurisdiction}', {});
  });

  it('types each operation by its own response', async () => {
    const policy = await client.GET('/v1/scoring/policies/{jurisdiction}', {
      params: { path: { jurisdiction: 'FR' } },
    });
    expectTypeOf(policy.data).toEqualTypeOf<Policy | undefined>();
    const run = await client.GET('/v1/scoring/runs/{id}', { params: { path: { id: 'run_1' } } });
    expectTypeOf(run.data).toEqualTypeOf<Run | undefined>();
    expectTypeOf(run.error).toEqualTypeOf<Problem | undefined>();
    const log = await client.GET('/v1/logs/{cid}', { params: { path: { cid: 'b' } } });
    expectTypeOf(log.data).toEqualTypeOf<LogRecord | undefined>();
    const bytes = await client.GET('/v1/logs/{cid}', {
      params: { path: { cid: 'b' } },
      parseAs: 'arrayBuffer',
    });
    expectTypeOf(bytes.data).toEqualTypeOf<ArrayBuffer | undefined>();
  });
});
