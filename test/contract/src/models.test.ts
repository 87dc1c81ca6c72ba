import type { ScoringClient } from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientOf } from './harness/contract-client.js';
import { expectDocumentedResponse } from './harness/contract-validator.js';
import { preferHeader } from './harness/documented-answer.js';
import { startTarget, type Target } from './harness/targets.js';

let target: Target;
let client: ScoringClient;
beforeAll(async () => {
  target = await startTarget();
  client = clientOf(target);
});
afterAll(() => target?.stop());

const MODELS = { path: '/v1/scoring/models', method: 'get' } as const;
const MODEL = { path: '/v1/scoring/models/{model_version}', method: 'get' } as const;

describe('the model catalog', () => {
  it('lists scorecard-2 as current and scorecard-1 as retired, with the reason method and both languages', async () => {
    const result = await client.GET('/v1/scoring/models', {
      headers: preferHeader({ status: 200, example: 'Catalog' }),
    });
    expect(result.response.status).toBe(200);
    expectDocumentedResponse(MODELS, result.response, result.data);
    expect(result.data?.models.map((m) => [m.model_version, m.status])).toEqual([
      ['scorecard-2', 'current'],
      ['scorecard-1', 'retired'],
    ]);
    const current = result.data?.models[0];
    expect(current?.reason_method).toEqual({
      reason_code_algorithm: 'pointsBelow',
      baseline_method: 'max',
      scenario: 'p50',
      max_reasons: 4,
      inquiries_as_fifth: true,
    });
    expect(current?.reason_codes.find((c) => c.code === 'RI0')).toEqual({
      code: 'RI0',
      factor: 'recent_inquiries',
      input: 'missing',
      statements: {
        en: 'Not enough information about recent applications for credit',
        de: 'Keine ausreichenden Informationen zu Kreditanträgen der letzten Zeit',
      },
    });
  });

  it('answers one version, and 404 not_found for a version that does not exist', async () => {
    const one = await client.GET('/v1/scoring/models/{model_version}', {
      params: { path: { model_version: 'scorecard-2' } },
      headers: preferHeader({ status: 200, example: 'Scorecard2' }),
    });
    expect(one.response.status).toBe(200);
    expectDocumentedResponse(MODEL, one.response, one.data);
    expect(one.data?.status).toBe('current');
    const unknown = await client.GET('/v1/scoring/models/{model_version}', {
      params: { path: { model_version: 'scorecard-9' } },
      headers: preferHeader({ status: 404, example: 'ModelNotFound' }),
    });
    expect(unknown.response.status).toBe(404);
    expectDocumentedResponse(MODEL, unknown.response, unknown.error);
    expect(unknown.error).toMatchObject({ code: 'not_found', status: 404 });
  });
});
